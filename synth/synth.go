// Package synth makes BF16 test and benchmark data that needs no file: KV-cache-like values with the exponent
// distribution of the shared KV corpus, Gaussian values, and data with a chosen fraction of escaped exponents.
// Generation is deterministic for a seed and parallel, so half a gigabyte takes well under a second.
package synth

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/vkzip/vkzip/codec"
)

// KVExponents is the exponent histogram of ../shared/data/stories260k-kv-test.safetensors (2,621,440 BF16 values
// of post-RoPE keys and values of the stories260K model), measured with `vkzip calibrate --json`.
var KVExponents = map[uint8]uint64{
	104: 1, 106: 1, 107: 5, 108: 6, 109: 7, 110: 20, 111: 33, 112: 48, 113: 149, 114: 236, 115: 475, 116: 1186,
	117: 2138, 118: 4627, 119: 9258, 120: 19433, 121: 37854, 122: 72080, 123: 150458, 124: 279046, 125: 495034,
	126: 618377, 127: 546276, 128: 324455, 129: 59776, 130: 461,
}

// KVCodebook is the codebook calibrated on KVExponents (the same one the shared calibration file gives).
func KVCodebook() codec.Codebook {
	var h codec.ExpHistogram
	for e, c := range KVExponents {
		h[e] = c
	}
	return codec.CodebookFromHistogram(&h)
}

// expTable maps a uniform 16-bit number to an exponent with probabilities proportional to hist.
func expTable(hist map[uint8]uint64) *[65536]uint8 {
	var t [65536]uint8
	var total uint64
	for _, c := range hist {
		total += c
	}
	i := 0
	var cum uint64
	for e := 0; e < 256; e++ {
		c := hist[uint8(e)]
		if c == 0 {
			continue
		}
		cum += c
		end := int(cum * 65536 / total)
		for ; i < end; i++ {
			t[i] = uint8(e)
		}
	}
	for ; i < 65536; i++ {
		t[i] = t[i-1]
	}
	return &t
}

// fill runs gen over n values in parallel blocks, each with its own generator seeded from (seed, block).
func fill(n int, seed uint64, gen func(r *rand.Rand, dst []byte)) []byte {
	out := make([]byte, 2*n)
	const block = 1 << 20 // values
	blocks := (n + block - 1) / block
	var wg sync.WaitGroup
	work := make(chan int, blocks)
	for b := 0; b < blocks; b++ {
		work <- b
	}
	close(work)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				r := rand.New(rand.NewPCG(seed, uint64(b)))
				lo, hi := b*block, min((b+1)*block, n)
				gen(r, out[2*lo:2*hi])
			}
		}()
	}
	wg.Wait()
	return out
}

// KVLike returns n values whose exponents follow KVExponents, with random signs and mantissas.
func KVLike(n int, seed uint64) []byte { return Mixed(n, seed, 0, nil) }

// Mixed returns KV-like values of which a fraction p has exponents outside cb (escapes for that codebook).
func Mixed(n int, seed uint64, p float64, cb *codec.Codebook) []byte {
	t := expTable(KVExponents)
	var outside []uint8
	if cb != nil {
		for e := 0; e < 255; e++ { // 255 (Inf/NaN) stays out: escapes are ordinary numbers here
			if !cb.Has(uint8(e)) {
				outside = append(outside, uint8(e))
			}
		}
	}
	thresh := uint64(p * (1 << 32))
	return fill(n, seed, func(r *rand.Rand, dst []byte) {
		for i := 0; i+2 <= len(dst); i += 2 {
			x := r.Uint64()
			e := t[uint16(x)]
			if thresh > 0 && uint64(uint32(x>>32)) < thresh {
				e = outside[int(x>>16&0xFFFF)%len(outside)]
			}
			v := uint16(x>>24)&0x807F | uint16(e)<<7
			binary.LittleEndian.PutUint16(dst[i:], v)
		}
	})
}

// Gauss returns n standard-normal values rounded to BF16 (round to nearest even).
func Gauss(n int, seed uint64) []byte {
	return fill(n, seed, func(r *rand.Rand, dst []byte) {
		for i := 0; i+2 <= len(dst); i += 2 {
			binary.LittleEndian.PutUint16(dst[i:], BF16(float32(r.NormFloat64())))
		}
	})
}

// BF16 rounds a float32 to BF16 (nearest even; NaNs stay NaN).
func BF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7FFFFFFF > 0x7F800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7FFF + (u >> 16 & 1)) >> 16)
}
