package vkcodec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec/layout"
)

// BenchmarkXWHost times whole Encode and Decode calls of the exponent-window kernels (xw3, 2^20 KV-like values,
// default chunks), staging included.
func BenchmarkXWHost(b *testing.B) {
	k := newXWKernels(openTest(b, Options{}))
	r := rand.New(rand.NewPCG(1, 1))
	ctx := context.Background()
	const n = 1 << 20
	for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		src := xwValues(r, dt, n, 1.6)
		body, err := k.Encode(ctx, layout.FormatXW3, dt, src, n, layout.DefaultChunkShift, true)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("encode/%v", dt), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				if _, err := k.Encode(ctx, layout.FormatXW3, dt, src, n, layout.DefaultChunkShift, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		dst := make([]byte, len(src))
		b.Run(fmt.Sprintf("decode/%v", dt), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				if e, err := k.Decode(ctx, layout.FormatXW3, dt, body, n, layout.DefaultChunkShift, true, dst); err != nil || e != nil {
					b.Fatal(err, e)
				}
			}
		})
	}
}
