package codec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

func addGoldenSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.vkz"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 20000 {
			f.Add(b)
		}
	}
}

// FuzzParseHeader: the container parser never panics, every error is typed, and a parsed header describes bodies
// inside the input.
func FuzzParseHeader(f *testing.F) {
	addGoldenSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ct, err := ParseHeader(b)
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		for _, r := range ct.Recs {
			if !r.Blob {
				require.LessOrEqual(t, r.BodyOff+r.BodyLen, uint64(len(b)))
			}
		}
	})
}

// FuzzDecode: decoding never panics and only fails with typed errors; whatever decodes is canonical, i.e. encoding
// the decoded records again with the payload's own codebook, chunk size and checksum flag gives the same bytes.
func FuzzDecode(f *testing.F) {
	addGoldenSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		dec := newCPU(t)
		var recs []Record
		var shifts []uint8
		err := dec.DecodeStream(context.Background(), b, func(r *Rec, d []byte) error {
			rec := Record{Blob: r.Blob, Name: r.Name, DType: r.DType, Shape: r.Shape, Data: append([]byte{}, d...)}
			if r.Blob {
				rec.Data = append([]byte{}, r.Data...)
			} else if r.Format == layout.FormatSplitZip4 {
				shifts = append(shifts, r.Shift)
			}
			recs = append(recs, rec)
			return nil
		})
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		ct, err := ParseHeader(b)
		require.NoError(t, err)
		if ct.Size != uint64(len(b)) {
			return // a multi-frame stream: frames re-encode one by one, checked by the stream tests
		}
		opts := []Option{WithChecksums(ct.Checksums())}
		if len(ct.Codebooks) > 1 {
			return
		}
		if len(ct.Codebooks) == 1 {
			opts = append(opts, WithCodebook(ct.Codebooks[0]))
		}
		for _, s := range shifts {
			if s != shifts[0] {
				return
			}
		}
		if len(shifts) > 0 {
			opts = append(opts, WithChunkSize(1<<shifts[0]))
		}
		for _, r := range ct.Recs {
			// The encoder stores every BF16 tensor it can code as splitzip4; a payload that stores one is valid but
			// not reproducible by re-encoding.
			if !r.Blob && r.Format == layout.FormatStored && r.DType == layout.DTypeBF16 && r.Elements > 0 {
				return
			}
		}
		again, err := newCPU(t, opts...).Encode(context.Background(), nil, recs, ct.Flags&layout.FlagFinal != 0)
		require.NoError(t, err)
		require.Equal(t, b, again, "a decodable payload that is not canonical")
	})
}
