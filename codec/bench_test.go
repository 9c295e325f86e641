package codec

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/vkzip/vkzip/codec/layout"
)

// The CPU figures in bench/RESULTS.md come from:
//
//	go test -run '^$' -bench . -cpu 1,2 ./codec/
//
// Sizes: a 1 MiB and an 8 MiB tensor (KV blocks as a serving stack ships them; they stay in the last-level cache)
// and 64 MiB (streaming from and to main memory).

// benchInput is built on first use so that tests (which watch the heap) do not carry it.
var benchInput = sync.OnceValue(func() []byte { return kvLike(rand.New(rand.NewPCG(1, 1)), 32<<20, 0.0008) })

var benchSizes = []struct {
	name string
	n    int
}{{"1MiB", 1 << 20}, {"8MiB", 8 << 20}, {"64MiB", 64 << 20}}

func benchCodebook() Codebook {
	var h ExpHistogram
	h.Add(benchInput()[:1<<20])
	return CodebookFromHistogram(&h)
}

func BenchmarkEncode(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			src := benchInput()[:sz.n]
			c := newCPU(b, WithCodebook(benchCodebook()))
			dst, err := c.EncodeAll(src, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if dst, err = c.EncodeAll(src, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(src))/float64(len(dst)), "ratio")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			src := benchInput()[:sz.n]
			c := newCPU(b, WithCodebook(benchCodebook()))
			enc, err := c.EncodeAll(src, nil)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, len(src))
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if dst, err = c.DecodeAll(enc, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFormatsBF16 measures every BF16 format on the same KV-like input (splitzip4 with a fixed codebook), whole
// containers through Codec, as BenchmarkEncode and BenchmarkDecode do for splitzip4.
func BenchmarkFormatsBF16(b *testing.B) {
	for _, f := range Formats() {
		if f.CPU == nil || !f.Accepts(layout.DTypeBF16, 1) {
			continue
		}
		for _, sz := range benchSizes {
			src := benchInput()[:sz.n]
			c := newCPU(b, WithFormat(f.Name), WithCodebook(benchCodebook()))
			enc, err := c.EncodeAll(src, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(f.Name+"/encode/"+sz.name, func(b *testing.B) {
				dst := make([]byte, 0, len(enc))
				b.SetBytes(int64(len(src)))
				for i := 0; i < b.N; i++ {
					if dst, err = c.EncodeAll(src, dst[:0]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(src))/float64(len(dst)), "ratio")
			})
			b.Run(f.Name+"/decode/"+sz.name, func(b *testing.B) {
				dst := make([]byte, 0, len(src))
				b.SetBytes(int64(len(src)))
				for i := 0; i < b.N; i++ {
					if dst, err = c.DecodeAll(enc, dst[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
