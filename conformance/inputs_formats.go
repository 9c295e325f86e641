package conformance

import (
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
)

// Input generators of the auto, exponent-window and zf12 corpora. They belong to the runner: a case's input is
// rebuilt from its Spec (generator name, length, seed, arguments) when the corpus loads.

// Float kinds of the float/1 generator: its args are [dtype, kind, p].
const (
	FloatKV      = 0 // kvlike/1 values converted from BF16 (round to nearest even, saturating: cmd/fpderive's rule)
	FloatUniform = 1 // uniform random bits: exponents everywhere (raw chunks, escapes)
	FloatAll     = 2 // every bit pattern of an 8/16-bit dtype, ascending (p = 0) or shuffled (p = 1); F32: random
	FloatWindow  = 3 // exponents uniform in [base, base+span] (p = base<<8 | span), random sign and mantissa
	FloatEscmix  = 4 // escmix/1 (p per million outside the KV exponents) converted from BF16
	FloatGauss   = 5 // gauss/1 at scale 2^p converted from BF16
)

// FloatBits is the exponent and mantissa widths of a float dtype (BF16 included).
func FloatBits(d layout.DType) (E, M uint, ok bool) {
	if d == layout.DTypeBF16 {
		return 8, 7, true
	}
	return layout.FloatFields(d)
}

func init() {
	// automix/1: chunks of args[0] values; chunk c follows args[1 + c mod (len(args)-1)]: 0 takes kvCodebook's exponents
	// spread over more than a zf12 block range (SplitZip-4 codes them), 1 exponents 132..143 that kvCodebook lacks but
	// one zf12 block range holds (zf12 codes them; a 7-exponent window misses 5 of 12), 2 exponents 132..137
	// (TBE-3 codes them: one window holds all six). Values with i mod 997 = 5 take exponent 40 (an escape, a
	// fallback and a wide block) to keep every candidate honest.
	RegisterInput("automix/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) < 2 || args[0] < 1 {
			return nil, fmt.Errorf("automix/1 needs a chunk size and a pattern")
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			x := r.next()
			e := kvCodebook[r.below(16)]
			switch args[1+(int64(i)/args[0])%int64(len(args)-1)] {
			case 1:
				e = uint8(132 + r.below(12)) // fields 66..71
			case 2:
				e = uint8(132 + r.below(6))
			}
			if i%997 == 5 {
				e = 40
			}
			put(out, i, bf16(x>>16, e))
		}
		return out, nil
	})

	// autoxw/1: n values of dtype args[0] in chunks of args[1] values; chunk c spreads its exponents over
	// args[2 + c mod (len(args)-2)] consecutive values from 1 (3: xw2 codes them, 7: xw3, 15: xw4), sign and
	// mantissa random; one value in 50 takes any exponent (escapes).
	RegisterInput("autoxw/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) < 3 || args[1] < 1 {
			return nil, fmt.Errorf("autoxw/1 needs a dtype, a chunk size and a pattern")
		}
		d := layout.DType(args[0])
		E, M, ok := layout.FloatFields(d)
		if !ok {
			return nil, fmt.Errorf("autoxw/1: dtype %v", d)
		}
		size := d.Size()
		r, out := rng{seed}, make([]byte, size*n)
		for i := 0; i < n; i++ {
			span := uint64(args[2+(int64(i)/args[1])%int64(len(args)-2)])
			x := min(1<<E-1, 1+r.below(int(span)))
			if r.below(50) == 0 {
				x = r.below(1 << E)
			}
			v := r.next()&(1<<M-1) | uint64(x)<<M | (r.next()&1)<<(E+M)
			for b := 0; b < size; b++ {
				out[size*i+b] = byte(v >> (8 * b))
			}
		}
		return out, nil
	})

	// float/1: values of any float dtype. args = [dtype, kind, p] (kinds above).
	RegisterInput("float/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) != 3 || args[0] < 0 || args[0] > 255 {
			return nil, fmt.Errorf("float/1 wants [dtype, kind, p]")
		}
		d := layout.DType(args[0])
		E, M, ok := FloatBits(d)
		if !ok {
			return nil, fmt.Errorf("float/1: dtype %v", d)
		}
		size := d.Size()
		out := make([]byte, size*n)
		r := rng{seed}
		putv := func(i int, v uint64) {
			for b := 0; b < size; b++ {
				out[size*i+b] = byte(v >> (8 * b))
			}
		}
		convert := func(gen string, p []int64) ([]byte, error) {
			f, _ := lookupInput(gen)
			src, err := f(n, seed, p)
			if err != nil {
				return nil, err
			}
			if d == layout.DTypeBF16 {
				return src, nil
			}
			return synth.ConvertBF16(nil, src, d)
		}
		switch args[1] {
		case FloatKV:
			return convert("kvlike/1", nil)
		case FloatEscmix:
			return convert("escmix/1", []int64{args[2]})
		case FloatGauss:
			return convert("gauss/1", []int64{args[2]})
		case FloatUniform:
			for i := 0; i < n; i++ {
				putv(i, r.next())
			}
		case FloatAll:
			bits := 8 * size
			for i := 0; i < n; i++ {
				if bits > 16 {
					putv(i, r.next())
				} else {
					putv(i, uint64(i)&(1<<bits-1))
				}
			}
			if args[2] == 1 {
				for i := n - 1; i > 0; i-- {
					j := r.below(i + 1)
					for b := 0; b < size; b++ {
						out[size*i+b], out[size*j+b] = out[size*j+b], out[size*i+b]
					}
				}
			}
		case FloatWindow:
			base, span := int(args[2]>>8), int(args[2]&0xFF)
			if base+span >= 1<<E {
				return nil, fmt.Errorf("float/1: window [%d, %d] past %d exponent bits", base, base+span, E)
			}
			for i := 0; i < n; i++ {
				x := r.next()
				e := uint64(base + r.below(span+1))
				putv(i, (x>>63)<<(E+M)|e<<M|x&(1<<M-1))
			}
		default:
			return nil, fmt.Errorf("float/1: kind %d", args[1])
		}
		return out, nil
	})

	// zfblocks/1: blocks of 512 values with chosen field ranges. Block b takes args[b mod len(args)] = base<<8 |
	// span: its first value has field base, its second base+span, the others a random field in between (all
	// clamped to 127); exponent low bits, signs and mantissas are random.
	RegisterInput("zfblocks/1", func(n int, seed uint64, args []int64) ([]byte, error) {
		if err := checkN(n, maxGenValues); err != nil {
			return nil, err
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("zfblocks/1 needs block specs")
		}
		r, out := rng{seed}, make([]byte, 2*n)
		for i := 0; i < n; i++ {
			spec := args[(i/layout.ZF12Block)%len(args)]
			base, span := int(spec>>8)&0x7F, int(spec)&0xFF
			x := r.next()
			f := base + r.below(span+1)
			switch i % layout.ZF12Block {
			case 0:
				f = base
			case 1:
				f = base + span
			}
			f = min(f, 127)
			put(out, i, bf16(x>>16, uint8(2*f)|uint8(x>>40&1)))
		}
		return out, nil
	})
}
