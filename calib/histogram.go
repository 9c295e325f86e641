// Package calib gathers BF16 exponent statistics and calibrates SplitZip-4 codebooks from them.
//
// A codebook holds the 16 exponents that get 4-bit codes; every other exponent is escaped. Calibration picks the
// 16 most frequent exponents of representative data, and Evaluate measures how well a codebook covers other data.
// Codebooks are saved as small JSON files (see Save).
package calib

import (
	"math"
	"runtime"
	"sync"

	"github.com/vkzip/vkzip/codec"
)

// Histogram counts BF16 values by exponent (bits 14..7 of the value).
type Histogram [256]uint64

// Add counts the exponents of the little-endian BF16 values in b. A trailing odd byte is not a value and is
// ignored. Add does not allocate. The counting itself is codec.ExpHistogram's, the one the encoder calibrates with.
func (h *Histogram) Add(b []byte) { (*codec.ExpHistogram)(h).Add(b) }

// parallelMin is the input size below which AddParallel counts on the calling goroutine: goroutine start-up
// would cost more than it saves.
const parallelMin = 1 << 20

// AddParallel is Add spread over up to workers goroutines (GOMAXPROCS when workers <= 0).
func (h *Histogram) AddParallel(b []byte, workers int) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(b)/parallelMin)
	if workers <= 1 {
		h.Add(b)
		return
	}
	// Pieces are whole 8-byte words, so that no value is split; the last piece takes the rest.
	piece := (len(b) / workers) &^ 7
	parts := make([]Histogram, workers)
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := i*piece, (i+1)*piece
		if i == workers-1 {
			hi = len(b)
		}
		wg.Go(func() { parts[i].Add(b[lo:hi]) })
	}
	wg.Wait()
	for i := range parts {
		h.Merge(&parts[i])
	}
}

// Merge adds the counts of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for e, c := range o {
		h[e] += c
	}
}

// Total is the number of values counted.
func (h *Histogram) Total() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Distinct is the number of exponents that occur.
func (h *Histogram) Distinct() int {
	n := 0
	for _, c := range h {
		if c != 0 {
			n++
		}
	}
	return n
}

// Entropy is the Shannon entropy of the exponent distribution in bits per value: the least any coder of the
// exponents alone, value by value, can spend on average. It is 0 for an empty histogram.
func (h *Histogram) Entropy() float64 {
	total := float64(h.Total())
	if total == 0 {
		return 0
	}
	var e float64
	for _, c := range h {
		if c != 0 {
			p := float64(c) / total
			e -= p * math.Log2(p)
		}
	}
	return e
}
