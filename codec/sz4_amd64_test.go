//go:build amd64 && !purego

package codec

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// TestAVX2MatchesGo encodes and decodes random data with random codebooks through the assembly loops and the Go
// loops and requires identical bytes.
func TestAVX2MatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 on this CPU: only the Go loops exist")
	}
	defer func() { useAVX2 = true }()
	r := rand.New(rand.NewPCG(77, 78))
	for it := 0; it < 300; it++ {
		var cb Codebook
		perm := r.Perm(256)
		if it%3 == 0 { // a KV-like window of exponents: few high nibbles
			base := 100 + r.IntN(40)
			for i := range cb {
				cb[i] = uint8(base + (i*7)%16)
			}
		} else {
			for i := range cb {
				cb[i] = uint8(perm[i])
			}
		}
		n := r.IntN(5000)
		src := make([]byte, 2*n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		for i := 0; i < n; i++ { // mostly codebook exponents, some escapes
			if r.IntN(10) != 0 {
				e := cb[r.IntN(16)]
				v := uint16(src[2*i]) | uint16(src[2*i+1])<<8
				v = v&0x807F | uint16(e)<<7
				src[2*i], src[2*i+1] = byte(v), byte(v>>8)
			}
		}
		shift := uint(10 + r.IntN(7))
		g := layout.SZ4{N: uint64(n), Shift: shift}
		if n == 0 {
			continue
		}
		enc := func(avx bool) []byte {
			useAVX2 = avx
			jobs := []EncodeJob{{Format: layout.FormatSplitZip4, Src: src, N: g.N, Shift: shift, Codebook: &cb,
				Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
			require.NoError(t, NewCPUBackend(2).Encode(context.Background(), jobs))
			return jobs[0].Out
		}
		a, b := enc(true), enc(false)
		require.Equal(t, b, a, "iteration %d: assembly encode differs", it)
		dec := func(avx bool) []byte {
			useAVX2 = avx
			jobs := []DecodeJob{{Format: layout.FormatSplitZip4, Body: a, N: g.N, Shift: shift, Codebook: &cb,
				Checksums: true, Dst: make([]byte, 2*n)}}
			require.NoError(t, NewCPUBackend(2).Decode(context.Background(), jobs))
			require.NoError(t, jobs[0].Err)
			return jobs[0].Dst
		}
		require.Equal(t, src, dec(true), "iteration %d: assembly decode", it)
		require.Equal(t, src, dec(false))
	}
}
