package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/spec"
)

// xwPairs are the (format, dtype) pairs the exponent-window formats define.
var xwPairs = func() (ps []struct {
	f  uint8
	dt layout.DType
}) {
	for _, f := range []uint8{layout.FormatXW3, layout.FormatXW2, layout.FormatXW4} {
		for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
			if _, ok := layout.NewXW(f, dt, 1, 16); ok {
				ps = append(ps, struct {
					f  uint8
					dt layout.DType
				}{f, dt})
			}
		}
	}
	return ps
}()

func pairName(f uint8, dt layout.DType) string { return formatNameXW(f) + "/" + dt.String() }

// floatValues draws n values of dt whose exponent fields are normal around center (in units of the field) with
// the given spread, and whose signs and mantissas are random.
func floatValues(r *rand.Rand, dt layout.DType, n int, center, spread float64) []byte {
	e, m, _ := layout.FloatFields(dt)
	size := dt.Size()
	b := make([]byte, n*size)
	for i := 0; i < n; i++ {
		x := int(center + spread*r.NormFloat64())
		x = min(max(x, 0), 1<<e-1)
		v := uint32(x)<<m | r.Uint32()&(1<<m-1) | r.Uint32()&1<<(8*size-1)
		storeValue(b, i, size, v)
	}
	return b
}

// kvCenter puts the mass of the exponent field where KV values (magnitudes around 2^-1) sit in each dtype.
func kvCenter(dt layout.DType) float64 {
	e, _, _ := layout.FloatFields(dt)
	return float64(int(1)<<(e-1)-1) - 1.5 // bias - 1.5
}

func xwEncode(t testing.TB, f uint8, dt layout.DType, src []byte, shift uint, checksums bool) []byte {
	t.Helper()
	n := uint64(len(src) / dt.Size())
	max, err := xwMaxBodySize(f, dt, n, shift)
	require.NoError(t, err)
	body, err := NewCPUBackend(2).EncodeXW(context.Background(), f, dt, src, n, shift, checksums, make([]byte, max))
	require.NoError(t, err)
	require.LessOrEqual(t, uint64(len(body)), max)
	return body
}

func xwDecode(t testing.TB, f uint8, dt layout.DType, body []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	t.Helper()
	dst := make([]byte, n*uint64(dt.Size()))
	bodyErr, err := NewCPUBackend(2).DecodeXW(context.Background(), f, dt, body, n, shift, checksums, dst)
	require.NoError(t, err)
	return dst, bodyErr
}

// newRefGeom is internal/spec's independent encoder of §13 for a pair the tests use.
func newRefGeom(f uint8, dt layout.DType, shift uint) spec.XWGeom {
	g, ok := spec.NewXWGeom(f, uint8(dt), shift)
	if !ok {
		panic("no exponent-window geometry for " + pairName(f, dt))
	}
	return g
}

func setBit(b []byte, bit uint64) { b[bit/8] |= 1 << (bit % 8) }

func valuesOf(b []byte, size int) []uint32 {
	v := make([]uint32, len(b)/size)
	for i := range v {
		v[i] = loadValue(b, i, size)
	}
	return v
}

// ---- Round trips and agreement with the reference encoder.

func TestXWMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range xwPairs {
		for _, spread := range []float64{0.7, 1.5, 3, 40} {
			for _, n := range []int{1, 31, 32, 33, 1000, 1024, 1025, 2*1024 + 77} {
				for _, cs := range []bool{true, false} {
					name := fmt.Sprintf("%s/spread%v/n%d/crc%v", pairName(p.f, p.dt), spread, n, cs)
					src := floatValues(r, p.dt, n, kvCenter(p.dt), spread)
					body := xwEncode(t, p.f, p.dt, src, 10, cs)
					ref := newRefGeom(p.f, p.dt, 10).Build(valuesOf(src, p.dt.Size()), cs, nil)
					require.Equal(t, ref, body, name)
					got, err := xwDecode(t, p.f, p.dt, body, uint64(n), 10, cs)
					require.NoError(t, err, name)
					require.Equal(t, src, got, name)
				}
			}
		}
	}
}

func TestXWRoundTripShifts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range xwPairs {
		for _, shift := range []uint{10, 12, 16} {
			for _, n := range []int{(1 << shift) - 1, 1 << shift, (1 << shift) + 1, 3<<shift + 5} {
				src := floatValues(r, p.dt, n, kvCenter(p.dt), 1.8)
				body := xwEncode(t, p.f, p.dt, src, shift, true)
				got, err := xwDecode(t, p.f, p.dt, body, uint64(n), shift, true)
				require.NoError(t, err)
				require.Equal(t, src, got, "%s shift %d n %d", pairName(p.f, p.dt), shift, n)
				require.Equal(t, body, xwEncode(t, p.f, p.dt, src, shift, true), "deterministic")
			}
		}
	}
}

// Every bit pattern of the 8- and 16-bit dtypes, in order and shuffled; for F32 every exponent with random signs
// and mantissas. In-order data puts each exponent in long runs (raw and coded chunks side by side).
func TestXWEveryBitPattern(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range xwPairs {
		var src []byte
		switch p.dt.Size() {
		case 1:
			for rep := 0; rep < 8; rep++ {
				for v := 0; v < 256; v++ {
					src = append(src, byte(v))
				}
			}
		case 2:
			for v := 0; v < 1<<16; v++ {
				src = binary.LittleEndian.AppendUint16(src, uint16(v))
			}
		case 4:
			for x := uint32(0); x < 256; x++ {
				for j := 0; j < 64; j++ {
					src = binary.LittleEndian.AppendUint32(src, r.Uint32()&^(0xFF<<23)|x<<23)
				}
			}
		}
		shuffled := append([]byte{}, src...)
		sz := p.dt.Size()
		r.Shuffle(len(shuffled)/sz, func(i, j int) {
			for q := 0; q < sz; q++ {
				shuffled[i*sz+q], shuffled[j*sz+q] = shuffled[j*sz+q], shuffled[i*sz+q]
			}
		})
		for _, data := range [][]byte{src, shuffled} {
			n := uint64(len(data) / sz)
			for _, shift := range []uint{10, 16} {
				body := xwEncode(t, p.f, p.dt, data, shift, true)
				got, err := xwDecode(t, p.f, p.dt, body, n, shift, true)
				require.NoError(t, err)
				require.Equal(t, data, got, pairName(p.f, p.dt))
			}
		}
		if sz == 1 {
			require.Equal(t, newRefGeom(p.f, p.dt, 10).Build(valuesOf(src, 1), true, nil), xwEncode(t, p.f, p.dt, src, 10, true))
		}
	}
}

// Data with every exponent equally likely: (almost) every chunk raw, the size bound reached.
func TestXWAllEscapes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, p := range xwPairs {
		n := 5000
		src := make([]byte, n*p.dt.Size())
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		body := xwEncode(t, p.f, p.dt, src, 10, true)
		g, _ := newXWGeom(p.f, p.dt, uint64(n), 10)
		require.Equal(t, g.MaxBodySize(), uint64(len(body)), "%s: all raw", pairName(p.f, p.dt))
		got, err := xwDecode(t, p.f, p.dt, body, uint64(n), 10, true)
		require.NoError(t, err)
		require.Equal(t, src, got)
		// The bound of docs/FORMAT.md §13.5: input + table + group padding + byte padding.
		require.LessOrEqual(t, len(body), len(src)+12*int(g.Chunks())+31*p.dt.Size()+3)
	}
}

// Chunks on both sides of the coded/raw threshold: the mass on exponent 0, k escapes spread over exponents that no
// window can hold together with 0 or with each other, each rarer than exponent 0.
func TestXWThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, p := range xwPairs {
		g, _ := newXWGeom(p.f, p.dt, 1024, 10)
		m := uint64(1024)
		kMax := uint64(0) // largest k that is coded
		for k := uint64(0); k <= m; k++ {
			if g.CodedFits(m, k) {
				kMax = k
			}
		}
		var far []uint32
		for x := uint32(g.Window()); x < 1<<g.E; x += uint32(g.Window()) {
			far = append(far, x)
		}
		for _, k := range []uint64{kMax, kMax + 1, kMax - 31} {
			require.Less(t, k/uint64(len(far))+1, m-k, "%s: test data would move the window", pairName(p.f, p.dt))
			vals := make([]uint32, m)
			for i := range vals {
				x := uint32(0)
				if uint64(i) < k {
					x = far[i%len(far)]
				}
				vals[i] = x<<g.M | r.Uint32()&(1<<g.M-1)
			}
			r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
			src := make([]byte, m*uint64(g.size))
			for i, v := range vals {
				storeValue(src, i, g.size, v)
			}
			body := xwEncode(t, p.f, p.dt, src, 10, true)
			info := binary.LittleEndian.Uint32(body[g.table:])
			require.Equal(t, k > kMax, info>>24 == layout.ChunkRaw, "%s k=%d", pairName(p.f, p.dt), k)
			got, err := xwDecode(t, p.f, p.dt, body, m, 10, true)
			require.NoError(t, err)
			require.Equal(t, src, got)
		}
	}
}

// ---- Invalid bodies.

func TestXWEveryBitFlipDetected(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, p := range xwPairs {
		n := 1024 + 100
		src := floatValues(r, p.dt, n, kvCenter(p.dt), 1.5)
		body := xwEncode(t, p.f, p.dt, src, 10, true)
		for bit := 0; bit < 8*len(body); bit += flipStride {
			bad := append([]byte{}, body...)
			bad[bit/8] ^= 1 << (bit % 8)
			_, err := xwDecode(t, p.f, p.dt, bad, uint64(n), 10, true)
			require.Error(t, err, "%s: flip of bit %d undetected", pairName(p.f, p.dt), bit)
			var e *Error
			require.True(t, errors.As(err, &e))
			require.True(t, errors.Is(err, ErrChecksum) || errors.Is(err, ErrCorrupt), "%s bit %d: %v",
				pairName(p.f, p.dt), bit, err)
		}
	}
}

// expectClass decodes body and checks the error class and chunk.
func expectClass(t *testing.T, f uint8, dt layout.DType, body []byte, n uint64, shift uint, cs bool, cls error,
	chunk int64, what string) {
	t.Helper()
	_, err := xwDecode(t, f, dt, body, n, shift, cs)
	require.Error(t, err, what)
	require.ErrorIs(t, err, cls, what)
	var e *Error
	require.True(t, errors.As(err, &e), what)
	require.Equal(t, chunk, e.Chunk, "%s: %v", what, err)
}

func TestXWNonCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, p := range xwPairs {
		for _, cs := range []bool{true, false} {
			const n = 3 * 1024
			name := pairName(p.f, p.dt)
			src := floatValues(r, p.dt, n, kvCenter(p.dt), 1.2)
			vals := valuesOf(src, p.dt.Size())
			rg := newRefGeom(p.f, p.dt, 10)
			canon := rg.Build(vals, cs, nil)
			require.Equal(t, canon, xwEncode(t, p.f, p.dt, src, 10, cs))
			g, _ := newXWGeom(p.f, p.dt, n, 10)
			tab := func(b []byte, c int) uint32 { return binary.LittleEndian.Uint32(b[g.table+12*uint64(c):]) }
			require.Equal(t, uint32(0), tab(canon, 1)>>24, "%s: chunk 1 is coded", name)

			// Chunk 1 raw although it fits coded.
			b := rg.Build(vals, cs, func(c int, e []uint32) spec.XWChoice {
				if c == 1 {
					return spec.XWChoice{Raw: true}
				}
				return rg.Canonical(e)
			})
			expectClass(t, p.f, p.dt, b, n, 10, cs, ErrNonCanonical, 1, name+": raw that fits coded")

			// Chunk 2 with a window other than the canonical one (one step off, still holding values).
			b = rg.Build(vals, cs, func(c int, e []uint32) spec.XWChoice {
				ch := rg.Canonical(e)
				if c == 2 {
					if ch.Base > 0 {
						ch.Base--
					} else {
						ch.Base++
					}
				}
				return ch
			})
			// (The lowest base wins ties, so a window one step off is never canonical; if it holds too few values
			// the chunk fails as "should be raw" instead, non-canonical too.)
			expectClass(t, p.f, p.dt, b, n, 10, cs, ErrNonCanonical, 2, name+": window off the best")

			// Chunk 0 escapes a value that has a code.
			b = rg.Build(vals, cs, func(c int, e []uint32) spec.XWChoice {
				ch := rg.Canonical(e)
				if c == 0 {
					for i, x := range e {
						if x >= ch.Base && x < ch.Base+uint32(g.Window()) {
							ch.Escape = map[int]bool{i: true}
							break
						}
					}
				}
				return ch
			})
			expectClass(t, p.f, p.dt, b, n, 10, cs, ErrNonCanonical, 0, name+": escape with a code")

			// Padding bits: a plane bit past the last value, byte-stream padding, escape padding.
			short := uint64(n - 5)
			sb := rg.Build(vals[:short], cs, nil)
			gs, _ := newXWGeom(p.f, p.dt, short, 10)
			pads := map[string]uint64{"plane bit": 8*(gs.PlaneBytes()-4) + 31}
			if gs.LowBytes() > uint64(gs.KB())*short {
				pads["byte padding"] = 8 * (gs.lows + gs.LowBytes() - 1)
			}
			if k := uint64(binary.LittleEndian.Uint32(sb[gs.table+24:]) & 0xFFFF); k%32 != 0 &&
				binary.LittleEndian.Uint32(sb[gs.table+24:])>>24 == 0 {
				pads["escape padding"] = 8*uint64(len(sb)) - 1 // top bit of the last escape plane
			}
			for what, bit := range pads {
				bad := append([]byte{}, sb...)
				bad[bit/8] |= 1 << (bit % 8)
				if cs {
					rg.FixCRCs(bad, short)
				}
				expectClass(t, p.f, p.dt, bad, short, 10, cs, ErrNonCanonical, 2, name+": "+what)
			}

			// Codes that disagree with the escape count: an in-window value's code cleared (one zero code too
			// many), an escaped value's code set (one too few).
			for _, tooMany := range []bool{true, false} {
				bad := append([]byte{}, canon...)
				done := false
				for i := 0; i < 1024 && !done; i++ {
					gi, bit := uint64(i/32), uint(i%32)
					var code uint32
					for b := uint(0); b < g.W; b++ {
						code |= binary.LittleEndian.Uint32(bad[4*(gi*uint64(g.Planes())+uint64(b)):]) >> bit & 1 << b
					}
					if (code != 0) == tooMany {
						for b := uint(0); b < g.W; b++ {
							w := bad[4*(gi*uint64(g.Planes())+uint64(b)):]
							binary.LittleEndian.PutUint32(w, binary.LittleEndian.Uint32(w)&^(1<<bit))
						}
						if !tooMany {
							setBit(bad, 8*4*gi*uint64(g.Planes())+uint64(bit))
						}
						done = true
					}
				}
				if !done {
					continue // chunk 0 has no escape to give a code
				}
				if cs {
					rg.FixCRCs(bad, n)
				}
				expectClass(t, p.f, p.dt, bad, n, 10, cs, ErrNonCanonical, 0, fmt.Sprintf("%s: too many zero codes %v", name, tooMany))
			}

			// Raw side padding: bits for values past the end of a raw last chunk.
			rb := rg.Build(vals[:short], cs, func(c int, e []uint32) spec.XWChoice {
				if c == 2 {
					return spec.XWChoice{Raw: true}
				}
				return rg.Canonical(e)
			})
			rb[len(rb)-1] |= 0x80
			if cs {
				rg.FixCRCs(rb, short)
			}
			_, err := xwDecode(t, p.f, p.dt, rb, short, 10, cs)
			require.ErrorIs(t, err, ErrNonCanonical, name)
			require.Contains(t, err.Error(), "raw side bits past the last value", name)

			if !cs {
				bad := append([]byte{}, canon...)
				bad[g.table+12+8] = 1
				expectClass(t, p.f, p.dt, bad, n, 10, cs, ErrNonCanonical, 1, name+": CRC without checksums")
			}
		}
	}
}

// A coded chunk whose count is past the threshold (decodable, but the encoder would have stored it raw).
func TestXWCodedThatShouldBeRaw(t *testing.T) {
	for _, p := range xwPairs {
		g, _ := newXWGeom(p.f, p.dt, 1024, 10)
		rg := newRefGeom(p.f, p.dt, 10)
		vals := make([]uint32, 1024)
		for i := range vals {
			vals[i] = uint32(i%(1<<g.E)) << g.M // every exponent equally often: raw
		}
		b := rg.Build(vals, true, nil)
		require.Equal(t, uint32(layout.ChunkRaw), binary.LittleEndian.Uint32(b[g.table:])>>24)
		b = rg.Build(vals, true, func(c int, e []uint32) spec.XWChoice {
			ch := spec.XWChoice{Base: 0}
			return ch
		})
		expectClass(t, p.f, p.dt, b, 1024, 10, true, ErrNonCanonical, 0, pairName(p.f, p.dt))
	}
}

func TestXWCorruptTables(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	p := xwPairs[0]
	const n = 3*1024 + 10
	src := floatValues(r, p.dt, n, kvCenter(p.dt), 1.2)
	body := xwEncode(t, p.f, p.dt, src, 10, true)
	g, _ := newXWGeom(p.f, p.dt, n, 10)
	entry := func(b []byte, c, w int) []byte { return b[g.table+12*uint64(c)+4*uint64(w):] }
	mut := func(f func(b []byte)) []byte {
		b := append([]byte{}, body...)
		f(b)
		return b
	}
	le := binary.LittleEndian
	info1 := le.Uint32(entry(body, 1, 0))
	cases := map[string][]byte{
		"kind 2":             mut(func(b []byte) { le.PutUint32(entry(b, 1, 0), 2<<24) }),
		"raw with base":      mut(func(b []byte) { le.PutUint32(entry(b, 1, 0), 1<<24|1<<16) }),
		"count > m":          mut(func(b []byte) { le.PutUint32(entry(b, 3, 0), 11) }),
		"base > max":         mut(func(b []byte) { le.PutUint32(entry(b, 1, 0), info1&0xFFFF|uint32(g.MaxBase()+1)<<16) }),
		"side offset":        mut(func(b []byte) { le.PutUint32(entry(b, 1, 1), le.Uint32(entry(b, 1, 1))+4) }),
		"short side":         body[:len(body)-4],
		"long side":          append(append([]byte{}, body...), 0, 0, 0, 0),
		"shorter than table": body[:g.table+8],
	}
	for what, b := range cases {
		_, err := xwDecode(t, p.f, p.dt, b, n, 10, true)
		require.ErrorIs(t, err, ErrCorrupt, what)
	}
}

// Precedence: structural errors, then checksums, then canonical form, each reporting its lowest chunk.
func TestXWErrorPrecedence(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	p := xwPairs[0]
	const n = 4 * 1024
	src := floatValues(r, p.dt, n, kvCenter(p.dt), 1.2)
	vals := valuesOf(src, p.dt.Size())
	rg := newRefGeom(p.f, p.dt, 10)
	g, _ := newXWGeom(p.f, p.dt, n, 10)
	b := rg.Build(vals, true, func(c int, e []uint32) spec.XWChoice {
		if c == 0 || c == 3 {
			return spec.XWChoice{Raw: true} // non-canonical in chunks 0 and 3
		}
		return rg.Canonical(e)
	})
	expectClass(t, p.f, p.dt, b, n, 10, true, ErrNonCanonical, 0, "lowest non-canonical chunk")
	pl, _ := g.planePiece(2)
	b[pl] ^= 1 // checksum error in chunk 2
	expectClass(t, p.f, p.dt, b, n, 10, true, ErrChecksum, 2, "checksum before non-canonical")
}

func TestCheckXWRecord(t *testing.T) {
	x, _ := layout.NewXW(layout.FormatXW3, layout.DTypeF16, 5000, 12)
	ok := func(bl uint64) error {
		return checkXWRecord(layout.FormatXW3, layout.DTypeF16, 12, layout.NoCodebook, 5000, bl)
	}
	require.NoError(t, ok(x.MinBodySize()))
	require.NoError(t, ok(x.MaxBodySize()))
	require.ErrorIs(t, ok(x.MaxBodySize()+4), ErrCorrupt)
	require.ErrorIs(t, ok(x.MinBodySize()-4), ErrCorrupt)
	require.ErrorIs(t, ok(x.MinBodySize()+2), ErrCorrupt)
	require.ErrorIs(t, checkXWRecord(layout.FormatXW4, layout.DTypeF8E4M3, 12, layout.NoCodebook, 10, 100), ErrCorrupt)
	require.ErrorIs(t, checkXWRecord(layout.FormatXW3, layout.DTypeBF16, 12, layout.NoCodebook, 10, 100), ErrCorrupt)
	require.ErrorIs(t, checkXWRecord(layout.FormatXW3, layout.DTypeF16, 9, layout.NoCodebook, 10, 100), ErrCorrupt)
	require.ErrorIs(t, checkXWRecord(layout.FormatXW3, layout.DTypeF16, 17, layout.NoCodebook, 10, 100), ErrCorrupt)
	require.ErrorIs(t, checkXWRecord(layout.FormatXW3, layout.DTypeF16, 12, 0, 5000, x.MinBodySize()), ErrNonCanonical)
	require.ErrorIs(t, checkXWRecord(layout.FormatXW3, layout.DTypeF16, 12, layout.NoCodebook, 1<<32, 0), ErrTooLarge)
}

func TestXWBadArguments(t *testing.T) {
	b := NewCPUBackend(1)
	ctx := context.Background()
	_, err := b.EncodeXW(ctx, layout.FormatXW3, layout.DTypeBF16, make([]byte, 8), 4, 10, true, make([]byte, 100))
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = b.EncodeXW(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 5, 10, true, make([]byte, 1000))
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = b.EncodeXW(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 4, 10, true, make([]byte, 10))
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = b.EncodeXW(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 4, 9, true, make([]byte, 1000))
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = b.DecodeXW(ctx, layout.FormatXW3, layout.DTypeF16, make([]byte, 8), 4, 10, true, make([]byte, 7))
	require.ErrorIs(t, err, ErrInvalidInput)
}
