package codec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec/layout"
)

// BenchmarkXW measures the reference codec on KV-like data (1M values; one goroutine, so figures are per core).
func BenchmarkXW(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 1 << 20
	be := NewCPUBackend(1)
	ctx := context.Background()
	for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		src := floatValues(r, dt, n, kvCenter(dt), 1.6)
		f := uint8(layout.FormatXW3)
		max, _ := xwMaxBodySize(f, dt, n, layout.DefaultChunkShift)
		dst := make([]byte, max)
		body, err := be.EncodeXW(ctx, f, dt, src, n, layout.DefaultChunkShift, true, dst)
		if err != nil {
			b.Fatal(err)
		}
		body = append([]byte{}, body...)
		out := make([]byte, len(src))
		b.Run(fmt.Sprintf("encode/%v", dt), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				if _, err := be.EncodeXW(ctx, f, dt, src, n, layout.DefaultChunkShift, true, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("decode/%v", dt), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				if e, err := be.DecodeXW(ctx, f, dt, body, n, layout.DefaultChunkShift, true, out); err != nil || e != nil {
					b.Fatal(err, e)
				}
			}
		})
	}
}
