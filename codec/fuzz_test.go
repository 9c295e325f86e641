package codec

import (
	"context"
	"errors"
	"math/rand/v2"
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
		err := dec.DecodeStream(context.Background(), b, func(r *ParsedRecord, d []byte) error {
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
		opts := []Option{WithChecksums(ct.Checksums()), WithContainerVersion(int(ct.Version))}
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

// FuzzSZ4Body drives the SplitZip-4 body decoder directly (the part GPU backends mirror): arbitrary bodies for a
// given value count and chunk size must give nil or a typed error, never a panic; a body that decodes must be the
// one the encoder produces for the decoded values.
func FuzzSZ4Body(f *testing.F) {
	cb := goldenCodebook
	for _, n := range []int{1, 7, 1024, 3000} {
		src := kvLike(rand.New(rand.NewPCG(uint64(n), 9)), n, 0.05)
		g := layout.SZ4{N: uint64(n), Shift: 10}
		jobs := []EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: 10, Codebook: &cb, Checksums: n%2 == 0,
			Dst: make([]byte, g.MaxBodySize())}}
		if err := NewCPUBackend(1).Encode(context.Background(), jobs); err == nil {
			f.Add(jobs[0].Out, uint32(n), n%2 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, n32 uint32, checksums bool) {
		n := uint64(n32 % 100000)
		g := layout.SZ4{N: n, Shift: 10}
		if n == 0 || uint64(len(body)) < g.MinBodySize() || uint64(len(body)) > g.MaxBodySize() || len(body)%4 != 0 {
			return // the container parser rejects these before a backend sees them
		}
		jobs := []DecodeJob{{Format: layout.FormatSplitZip4, Body: body, N: n, Shift: 10, Codebook: &cb,
			Checksums: checksums, Dst: make([]byte, 2*n)}}
		require.NoError(t, NewCPUBackend(2).Decode(context.Background(), jobs))
		if err := jobs[0].Err; err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "untyped error %v", err)
			return
		}
		enc := []EncodeJob{{Format: layout.FormatSplitZip4, Src: jobs[0].Dst, N: n, Shift: 10, Codebook: &cb,
			Checksums: checksums, Dst: make([]byte, g.MaxBodySize())}}
		require.NoError(t, NewCPUBackend(1).Encode(context.Background(), enc))
		require.Equal(t, body, enc[0].Out, "a body that decodes is not the canonical one")
	})
}
