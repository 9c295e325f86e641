package calib

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

// FuzzLoad: codebook files are user input; Load never panics, fails only with its typed errors, and what it accepts
// is a valid codebook that saves and loads back to the same thing.
func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	var h Histogram
	h[120], h[121], h[119] = 10, 5, 1
	cb, st := Calibrate(h)
	if err := Save(&buf, &Calibration{Codebook: cb, Stats: st, Source: "seed", Histogram: &h}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"vkzip-codebook","version":1,"dtype":"BF16","exponents":[1,2,3]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Load(bytes.NewReader(b))
		if err != nil {
			require.True(t, errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsupported), "untyped error %v", err)
			return
		}
		require.NoError(t, c.Codebook.Validate())
		var out bytes.Buffer
		require.NoError(t, Save(&out, c))
		again, err := Load(&out)
		require.NoError(t, err)
		require.Equal(t, c.Codebook, again.Codebook)
		_ = codec.Codebook{}
	})
}
