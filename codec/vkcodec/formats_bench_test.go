package vkcodec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// BenchmarkFormats is codec's BenchmarkFormats on the Vulkan backend: Codec.Encode and Decode of 8 MiB of KV-like
// values per (format, dtype), as tensors of 16,384 values ("kv") and as one tensor ("one"), staging included.
func BenchmarkFormats(b *testing.B) {
	vb := openTest(b, Options{})
	for _, x := range []struct {
		format string
		dt     layout.DType
	}{{"splitzip4", layout.DTypeBF16}, {"tbe3", layout.DTypeBF16}, {"xw3", layout.DTypeF8E5M2},
		{"xw3", layout.DTypeF8E4M3}, {"xw3", layout.DTypeF16}, {"xw3", layout.DTypeF32}} {
		r := rand.New(rand.NewPCG(2, 2))
		const total = 8 << 20
		var data []byte
		if x.dt == layout.DTypeBF16 {
			data = kvLike(r, total/2, 0.003)
		} else {
			data = xwValues(r, x.dt, total/x.dt.Size(), 1.6)
		}
		for _, shape := range []string{"kv", "one"} {
			per := len(data)
			if shape == "kv" {
				per = 16384 * x.dt.Size()
			}
			var recs []codec.Record
			for off := 0; off < len(data); off += per {
				recs = append(recs, codec.Record{Name: fmt.Sprint(off), DType: x.dt, Data: data[off : off+per]})
			}
			name := fmt.Sprintf("%s/%v/%s", x.format, x.dt, shape)
			c, err := codec.New(codec.WithBackend(vb), codec.WithFormat(x.format))
			if err != nil {
				b.Fatal(err)
			}
			enc, err := c.Encode(context.Background(), nil, recs, true)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("encode/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for i := 0; i < b.N; i++ {
					if _, err := c.Encode(context.Background(), enc[:0], recs, true); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(data))/float64(len(enc)), "ratio")
			})
			out := make([]byte, 0, len(data))
			b.Run("decode/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for i := 0; i < b.N; i++ {
					if out, err = c.DecodeAll(enc, out[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
