package codec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec/layout"
)

// BenchmarkFormats times Codec.Encode and Decode of 8 MiB of KV-like values per (format, dtype) on the CPU backend,
// as many tensors of 16,384 values ("kv", the shape of the shared KV files) and as one tensor ("one"):
//
//	go test -run '^$' -bench Formats -cpu 1,2 ./codec/
func BenchmarkFormats(b *testing.B) {
	for _, x := range []struct {
		format string
		dt     layout.DType
	}{{"splitzip4", layout.DTypeBF16}, {"zf12", layout.DTypeBF16}, {"tbe3", layout.DTypeBF16}, {"auto", layout.DTypeBF16}, {"xw3", layout.DTypeF8E5M2},
		{"xw3", layout.DTypeF8E4M3}, {"xw3", layout.DTypeF16}, {"xw3", layout.DTypeF32}} {
		r := rand.New(rand.NewPCG(2, 2))
		const total = 8 << 20
		var data []byte
		if x.dt == layout.DTypeBF16 {
			data = kvLike(r, total/2, 0.003)
		} else {
			data = floatValues(r, x.dt, total/x.dt.Size(), kvCenter(x.dt), 1.6)
		}
		for _, shape := range []string{"kv", "one"} {
			per := len(data)
			if shape == "kv" {
				per = 16384 * x.dt.Size()
			}
			var recs []Record
			for off := 0; off < len(data); off += per {
				recs = append(recs, Record{Name: fmt.Sprint(off), DType: x.dt, Data: data[off : off+per]})
			}
			name := fmt.Sprintf("%s/%v/%s", x.format, x.dt, shape)
			c := newCPU(b, WithFormat(x.format))
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
