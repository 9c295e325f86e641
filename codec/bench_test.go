package codec

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// The CPU figures in bench/RESULTS.md come from:
//
//	go test -run '^$' -bench . -cpu 1,2 ./codec/
//
// benchInput is built on first use so that tests (which watch the heap) do not carry it.
var benchInput = sync.OnceValue(func() []byte { return kvLike(rand.New(rand.NewPCG(1, 1)), 32<<20, 0.0008) })

func benchCodebook() Codebook {
	var h ExpHistogram
	h.Add(benchInput()[:1<<20])
	return CodebookFromHistogram(&h)
}

func BenchmarkEncode(b *testing.B) {
	c := newCPU(b, WithCodebook(benchCodebook()))
	dst, err := c.EncodeAll(benchInput(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchInput())))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst, err = c.EncodeAll(benchInput(), dst[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(benchInput()))/float64(len(dst)), "ratio")
}

func BenchmarkDecode(b *testing.B) {
	c := newCPU(b, WithCodebook(benchCodebook()))
	enc, err := c.EncodeAll(benchInput(), nil)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, len(benchInput()))
	b.SetBytes(int64(len(benchInput())))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if dst, err = c.DecodeAll(enc, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
