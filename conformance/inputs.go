package conformance

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Input generators make the large inputs of the corpus from a (generator, n, seed, args) spec instead of storing
// their bytes. They are part of the frozen corpus: a generator's output must never change (the manifest holds
// the SHA-256 of every generated input, so a change is caught when the corpus loads). To generate something
// different, register a new name; the "/1" suffix is the generator's own version.
//
// They use integer arithmetic only (no math library calls, no floating-point expressions the compiler could
// fuse), so that every platform generates the same bytes.

// GenBytes is the generator name of inputs stored in data.bin.
const GenBytes = "bytes"

// InputFunc generates n values (2n bytes for 16-bit dtypes) from a seed and generator-specific arguments.
type InputFunc func(n int, seed uint64, args []int64) ([]byte, error)

var (
	genMu sync.Mutex
	gens  = map[string]InputFunc{}
)

// RegisterInput adds a frozen input generator; names must be unique.
func RegisterInput(name string, f InputFunc) {
	genMu.Lock()
	defer genMu.Unlock()
	if _, dup := gens[name]; dup || name == GenBytes {
		panic("conformance: input generator " + name + " registered twice")
	}
	gens[name] = f
}

func lookupInput(name string) (InputFunc, bool) {
	genMu.Lock()
	defer genMu.Unlock()
	f, ok := gens[name]
	return f, ok
}

// rng is SplitMix64: tiny, fast and fully specified, so it can never change under the corpus.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// below returns a uniform number in [0, n) (n ≤ 2^32; the bias of the multiply-shift is irrelevant here).
func (r *rng) below(n int) int { return int(uint64(uint32(r.next())) * uint64(n) >> 32) }

// kvCodebook is the codebook calibrated on kvExponents (the one synth.KVCodebook and the shared calibration file
// give), frozen here.
var kvCodebook = [16]uint8{126, 127, 125, 128, 124, 123, 122, 129, 121, 120, 119, 118, 117, 116, 115, 130}

// kvExponents is the exponent histogram of the shared stories260K KV test file, frozen here (synth keeps its own
// copy, which may evolve).
var kvExponents = map[uint8]uint64{
	104: 1, 106: 1, 107: 5, 108: 6, 109: 7, 110: 20, 111: 33, 112: 48, 113: 149, 114: 236, 115: 475, 116: 1186,
	117: 2138, 118: 4627, 119: 9258, 120: 19433, 121: 37854, 122: 72080, 123: 150458, 124: 279046, 125: 495034,
	126: 618377, 127: 546276, 128: 324455, 129: 59776, 130: 461,
}

// kvTable maps a uniform 16-bit number to an exponent with kvExponents' frequencies.
var kvTable = func() *[65536]uint8 {
	var t [65536]uint8
	var total uint64
	for _, c := range kvExponents {
		total += c
	}
	i := 0
	var cum uint64
	for e := 0; e < 256; e++ {
		cum += kvExponents[uint8(e)]
		for end := int(cum * 65536 / total); i < end; i++ {
			t[i] = uint8(e)
		}
	}
	for ; i < 65536; i++ {
		t[i] = t[i-1]
	}
	return &t
}()

// outsideKV lists the 240 exponents that kvCodebook lacks, ascending.
var outsideKV = func() []uint8 {
	var in [256]bool
	for _, e := range kvCodebook {
		in[e] = true
	}
	var out []uint8
	for e := 0; e < 256; e++ {
		if !in[e] {
			out = append(out, uint8(e))
		}
	}
	return out
}()

// bf16 assembles a value from a random word's sign and mantissa bits and an exponent.
func bf16(x uint64, e uint8) uint16 { return uint16(x)&0x807F | uint16(e)<<7 }

func put(dst []byte, i int, v uint16) { binary.LittleEndian.PutUint16(dst[2*i:], v) }

func checkN(n, max int) error {
	if n < 0 || n > max {
		return fmt.Errorf("n = %d outside [0, %d]", n, max)
	}
	return nil
}

const maxGenValues = 1 << 24

func init() {
	// kvlike/1: exponents with the frequencies of the real KV data, random signs and mantissas.
	RegisterInput("kvlike/1", func(n int, seed uint64, _ []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			x := r.next()
			put(out, i, bf16(x>>16, kvTable[uint16(x)]))
		}
		return out, nil
	})
	// escmix/1: kvlike/1 values of which args[0] per million have an exponent outside kvCodebook.
	RegisterInput("escmix/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) != 1 || args[0] < 0 || args[0] > 1e6 {
			return nil, fmt.Errorf("escmix/1 wants one argument in [0, 1e6]")
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			x := r.next()
			e := kvTable[uint16(x)]
			if int64(uint32(x>>32)%1_000_000) < args[0] {
				e = outsideKV[r.below(len(outsideKV))]
			}
			put(out, i, bf16(x>>16, e))
		}
		return out, nil
	})
	// exps/1: exponents drawn uniformly from the argument list, random signs and mantissas.
	RegisterInput("exps/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) == 0 || len(args) > 256 {
			return nil, fmt.Errorf("exps/1 wants 1 to 256 exponents")
		}
		for _, e := range args {
			if e < 0 || e > 255 {
				return nil, fmt.Errorf("exponent %d", e)
			}
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			x := r.next()
			put(out, i, bf16(x, uint8(args[int(x>>32)%len(args)])))
		}
		return out, nil
	})
	// allbits/1: every BF16 bit pattern. args[0] = 0: ascending (n = 65536); 1: in a seeded random order
	// (n = 65536); 2: sparse, n = 16·65536, pattern i ascending at position 16i+7 among escape-free values with
	// kvCodebook's exponents, so that every pattern also sits in a coded chunk.
	RegisterInput("allbits/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("allbits/1 wants a mode")
		}
		switch args[0] {
		case 0, 1:
			if n != 65536 {
				return nil, fmt.Errorf("allbits/1 mode %d has 65536 values", args[0])
			}
			p := make([]uint16, n)
			for i := range p {
				p[i] = uint16(i)
			}
			if args[0] == 1 {
				r := rng{seed}
				for i := n - 1; i > 0; i-- {
					j := r.below(i + 1)
					p[i], p[j] = p[j], p[i]
				}
			}
			out := make([]byte, 2*n)
			for i, v := range p {
				put(out, i, v)
			}
			return out, nil
		case 2:
			if n != 16*65536 {
				return nil, fmt.Errorf("allbits/1 mode 2 has 16·65536 values")
			}
			r, out := rng{seed}, make([]byte, 2*n)
			for i := 0; i < n; i++ {
				if i%16 == 7 {
					put(out, i, uint16(i/16))
					continue
				}
				x := r.next()
				put(out, i, bf16(x, kvCodebook[x>>60]))
			}
			return out, nil
		}
		return nil, fmt.Errorf("allbits/1 mode %d", args[0])
	})
	// gauss/1: approximately normal values (Irwin–Hall sum of 12 uniforms, exact in integers) times 2^args[0],
	// rounded to BF16 to nearest even.
	RegisterInput("gauss/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) != 1 || args[0] < -100 || args[0] > 100 {
			return nil, fmt.Errorf("gauss/1 wants a scale exponent in [-100, 100]")
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			var s int64
			for k := 0; k < 3; k++ {
				x := r.next()
				s += int64(x&0xFFFF) + int64(x>>16&0xFFFF) + int64(x>>32&0xFFFF) + int64(x>>48)
			}
			s -= 6 * 65535 // mean 0, standard deviation about 65535/√12·√12 = 65535 · 1
			// Exact: |s| < 2^19 fits a float64 mantissa, and Ldexp only changes the exponent.
			f := math.Ldexp(float64(s), int(args[0])-16)
			put(out, i, roundBF16(math.Float64bits(f)))
		}
		return out, nil
	})
	// uniform/1: uniformly random 16-bit patterns (NaNs, infinities and subnormals included).
	RegisterInput("uniform/1", func(n int, seed uint64, _ []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			put(out, i, uint16(r.next()))
		}
		return out, nil
	})
	// burst/1: values with kvCodebook's exponents only, then escapes (exponents outside it) at the positions
	// start + i·stride, i < count, of each (start, count, stride) triple in args.
	RegisterInput("burst/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args)%3 != 0 {
			return nil, fmt.Errorf("burst/1 wants (start, count, stride) triples")
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			x := r.next()
			put(out, i, bf16(x, kvCodebook[x>>60]))
		}
		for t := 0; t < len(args); t += 3 {
			start, count, stride := args[t], args[t+1], args[t+2]
			for k := int64(0); k < count; k++ {
				p := start + k*stride
				if p < 0 || p >= int64(n) {
					return nil, fmt.Errorf("burst/1 position %d outside %d values", p, n)
				}
				x := r.next()
				put(out, int(p), bf16(x, outsideKV[r.below(len(outsideKV))]))
			}
		}
		return out, nil
	})
	// expmix/1: kvlike/1 values with exponent args[0] at every position ≡ 5 (mod 16).
	RegisterInput("expmix/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) != 1 || args[0] < 0 || args[0] > 255 {
			return nil, fmt.Errorf("expmix/1 wants an exponent")
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			x := r.next()
			e := kvTable[uint16(x)]
			if i%16 == 5 {
				e = uint8(args[0])
			}
			put(out, i, bf16(x>>16, e))
		}
		return out, nil
	})
}

// roundBF16 rounds a float64 (bits) to BF16, to nearest even, via its float32 rounding done in integers.
func roundBF16(f64 uint64) uint16 {
	f := math.Float32bits(float32(math.Float64frombits(f64))) // one correctly rounded conversion
	if f&0x7FFFFFFF > 0x7F800000 {
		return uint16(f>>16) | 0x40
	}
	return uint16((f + 0x7FFF + (f >> 16 & 1)) >> 16)
}

// InputGenerators lists the registered generator names.
func InputGenerators() []string {
	genMu.Lock()
	defer genMu.Unlock()
	var names []string
	for n := range gens {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
