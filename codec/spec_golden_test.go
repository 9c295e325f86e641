package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/internal/spec"
)

// specFrames encodes in with internal/spec as the golden payloads are made: a BF16 tensor named "" per frame of
// frame bytes (one frame when frame is 0), a one-byte blob after it when the frame's length is odd, FINAL on the
// last frame, version 2 frames numbered from 0.
func specFrames(t *testing.T, in []byte, frame, version int, g goldenCase) []byte {
	var cb *spec.Codebook
	if !g.Calibrate {
		x := spec.Codebook(goldenCodebook)
		cb = &x
	}
	shift := uint(0)
	for 1<<shift < g.Chunk {
		shift++
	}
	if frame == 0 {
		frame = len(in)
	}
	var out []byte
	for k, off := 0, 0; off < len(in) || k == 0; k++ {
		part := in[off:min(off+frame, len(in))]
		off += len(part)
		n := len(part) / 2
		recs := []spec.Record{{Name: "", DType: spec.DTypeBF16, Shape: []uint64{uint64(n)}, Data: part[:2*n]}}
		if len(part)%2 == 1 {
			recs = append(recs, spec.Record{Blob: true, Data: part[2*n:]})
		}
		c, err := spec.EncodeContainer(recs, spec.EncodeOptions{Version: version, Checksums: g.Checksums,
			Final: off == len(in), Shift: shift, Codebook: cb, Sequence: uint64(k)})
		require.NoError(t, err)
		out = append(out, c...)
	}
	return out
}

// TestGoldenSpec holds every golden payload to internal/spec, the codec written from docs/FORMAT.md alone: it
// decodes each to its input and its encoder reproduces each byte for byte.
func TestGoldenSpec(t *testing.T) {
	inputs := goldenInputs(t)
	checked := 0
	for _, g := range goldenCases() {
		in := inputs[g.Name]
		want, err := os.ReadFile(g.file())
		require.NoError(t, err)
		require.Greater(t, len(want), 10)
		dec, err := spec.DecodeStream(want)
		require.NoError(t, err, g.file())
		require.True(t, bytes.Equal(in, dec), "%s: spec decoder output differs from the input", g.file())
		version := int(binary.LittleEndian.Uint16(want[8:]))
		got := specFrames(t, in, g.Stream, version, g)
		require.Equal(t, len(want), len(got), "%s: spec encoder length", g.file())
		require.True(t, bytes.Equal(want, got), "%s: spec encoder bytes differ", g.file())
		checked++
	}
	require.Equal(t, len(goldenCases()), checked)
	t.Logf("%d golden payloads decoded and reproduced by internal/spec", checked)
}
