package codec

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConcurrentCodec shares one Codec between goroutines doing mixed, verified encodes and decodes (run it with
// -race). A few seconds normally; 64 goroutines × 60 s with VKZIP_SOAK=full.
func TestConcurrentCodec(t *testing.T) {
	workers, dur := 16, 2*time.Second
	if os.Getenv("VKZIP_SOAK") == "full" {
		workers, dur = 64, 60*time.Second
	}
	if testing.Short() {
		dur = 500 * time.Millisecond
	}
	c := newCPU(t, WithChunkSize(4096))
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for time.Now().Before(deadline) {
				src := kvLike(r, r.IntN(50000), []float64{0, 0.001, 0.5}[r.IntN(3)])
				enc, err := c.EncodeAll(src, nil)
				if err != nil {
					errs <- err
					return
				}
				dec, err := c.DecodeAll(enc, nil)
				if err != nil {
					errs <- err
					return
				}
				if string(dec) != string(src) {
					errs <- errors.New("round trip differs")
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// BenchmarkParallelCallers measures throughput with GOMAXPROCS callers each running single-goroutine codecs: with
// -cpu 1,2 it shows that calls share nothing (no global lock), so 2 callers get about twice the work done.
func BenchmarkParallelCallers(b *testing.B) {
	src := benchInput()[:8<<20]
	cb := benchCodebook()
	b.SetBytes(int64(len(src)))
	b.RunParallel(func(pb *testing.PB) {
		c, err := New(WithCodebook(cb), WithWorkers(1))
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		var enc, dec []byte
		for pb.Next() {
			if enc, err = c.EncodeAll(src, enc[:0]); err != nil {
				b.Error(err)
				return
			}
			if dec, err = c.DecodeAll(enc, dec[:0]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	_ = context.Background
}
