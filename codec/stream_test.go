package codec

import (
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamGiB pipes 1 GiB through Writer → Reader and checks the bytes and that streaming adds under 64 MiB
// of heap. It measures growth above the heap left live by earlier tests in the package (pools, fixtures), so
// the bound holds whether the test runs alone or with the rest.
func TestStreamGiB(t *testing.T) {
	// The heap may grow by the stream's working set (blocks in flight), never with the bytes piped: total stays
	// well above bound. The race detector makes 1 GiB take minutes and adds its own allocations to the working set.
	total, bound := int64(1<<30), uint64(64<<20)
	if raceEnabled || testing.Short() {
		total, bound = 256<<20, 96<<20
	}
	r := rand.New(rand.NewPCG(21, 22))
	block := kvLike(r, 2<<20, 0.001) // 4 MiB, varied per block below
	var h ExpHistogram
	h.Add(block)
	c := newCPU(t, WithCodebook(CodebookFromHistogram(&h)))

	runtime.GC()
	runtime.GC() // second cycle frees what the first one's finalizers released
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	pr, pw := io.Pipe()
	sent := sha256.New()
	go func() {
		w, err := c.NewWriter(context.Background(), pw, 0)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		buf := make([]byte, len(block))
		for off := int64(0); off < total; off += int64(len(buf)) {
			n := min(int64(len(buf)), total-off)
			copy(buf, block)
			buf[off/int64(len(buf))%int64(len(buf))] ^= 0x5A // every block differs
			sent.Write(buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(w.Close())
	}()
	got := sha256.New()
	n, err := io.Copy(got, c.NewReader(context.Background(), pr))
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	require.Equal(t, total, n)
	require.Equal(t, sent.Sum(nil), got.Sum(nil))
	grow := peak.Load() - min(peak.Load(), base.HeapAlloc)
	t.Logf("piped %d MiB, heap before %.1f MiB, peak %.1f MiB, growth %.1f MiB", total>>20,
		float64(base.HeapAlloc)/(1<<20), float64(peak.Load())/(1<<20), float64(grow)/(1<<20))
	require.Less(t, grow, bound)
}

func TestStreamEdgeCases(t *testing.T) {
	c := newCPU(t)
	for _, size := range []int{0, 1, 2, 3, 100, 8191, 8192, 8193, 50001} {
		src := kvLike(rand.New(rand.NewPCG(uint64(size), 1)), size/2+1, 0.01)[:size]
		var out sliceWriter
		w, err := c.NewWriter(context.Background(), &out, 8192)
		require.NoError(t, err)
		// Write in odd pieces.
		for p := src; len(p) > 0; {
			k := min(len(p), 777)
			_, err := w.Write(p[:k])
			require.NoError(t, err)
			p = p[k:]
		}
		require.NoError(t, w.Close())
		dec, err := io.ReadAll(c.NewReader(context.Background(), &sliceReader{b: out.b}))
		require.NoError(t, err, "size %d", size)
		require.Equal(t, string(src), string(dec))
		// DecodeAll reads streams too.
		all, err := c.DecodeAll(out.b, nil)
		require.NoError(t, err)
		require.Equal(t, string(src), string(all))
		// A stream cut after any whole frame but the last is truncated, not short.
		ct, err := ParseHeader(out.b)
		require.NoError(t, err)
		if int(ct.Size) < len(out.b) {
			_, err = io.ReadAll(c.NewReader(context.Background(), &sliceReader{b: out.b[:ct.Size]}))
			require.ErrorIs(t, err, ErrTruncated)
		}
		_, err = io.ReadAll(c.NewReader(context.Background(), &sliceReader{b: append(append([]byte{}, out.b...), 7)}))
		require.ErrorIs(t, err, ErrCorrupt)
	}
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
