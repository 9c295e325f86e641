package synth

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// The references below share no code with convert.go: they work on float64 values, not on bit fields.

func bf16Float(v uint16) float64 { return float64(math.Float32frombits(uint32(v) << 16)) }

// fp8Value decodes an FP8 code from the OCP definitions (NaN for NaN codes, ±Inf for E5M2 infinities).
func fp8Value(c uint8, man, bias int, e4m3 bool) float64 {
	s := 1.0
	if c&0x80 != 0 {
		s = -1
	}
	e := int(c&0x7F) >> man
	m := float64(int(c) & (1<<man - 1))
	switch {
	case e4m3 && c&0x7F == 0x7F:
		return math.NaN()
	case !e4m3 && e == 31 && m != 0:
		return math.NaN()
	case !e4m3 && e == 31:
		return math.Inf(int(s))
	case e == 0:
		return s * math.Ldexp(m, 1-bias-man)
	}
	return s * math.Ldexp(1+m/float64(int(1)<<man), e-bias)
}

// refFP8 rounds x by searching all 256 codes for the nearest finite one (ties: even code, i.e. even mantissa),
// saturating beyond the largest finite value, as the derivation specifies.
func refFP8(x float64, man, bias int, e4m3 bool, nan uint8) uint8 {
	var sign uint8
	if math.Signbit(x) {
		sign = 0x80
	}
	if math.IsNaN(x) {
		return sign | nan
	}
	a := math.Abs(x)
	best, bestD := -1, math.Inf(1)
	maxV := 0.0
	for c := 0; c < 0x80; c++ {
		v := fp8Value(uint8(c), man, bias, e4m3)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		maxV = math.Max(maxV, v)
		d := math.Abs(a - v)
		if d < bestD || d == bestD && c&1 == 0 {
			best, bestD = c, d
		}
	}
	if a > maxV { // saturation, ±Inf included
		for c := 0x7F; c >= 0; c-- {
			if fp8Value(uint8(c), man, bias, e4m3) == maxV {
				return sign | uint8(c)
			}
		}
	}
	return sign | uint8(best)
}

// refF16 rounds x to binary16 with float64 arithmetic: the quantum at x's exponent, RoundToEven, overflow to Inf.
func refF16(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
	}
	switch {
	case math.IsNaN(x):
		return sign | 0x7E00
	case math.IsInf(x, 0):
		return sign | 0x7C00
	case x == 0:
		return sign
	}
	a := math.Abs(x)
	_, exp := math.Frexp(a) // a = f·2^exp, f in [0.5, 1)
	q := max(exp-1, -14) - 10
	r := math.RoundToEven(math.Ldexp(a, -q))
	v := math.Ldexp(r, q)
	switch {
	case v >= 65536:
		return sign | 0x7C00
	case v == 0:
		return sign
	case v < math.Ldexp(1, -14): // subnormal: mantissa counts 2^-24
		return sign | uint16(math.Ldexp(v, 24))
	}
	_, e := math.Frexp(v)
	m := math.Ldexp(v, -(e-1)) - 1 // in [0, 1)
	return sign | uint16(e-1+15)<<10 | uint16(math.Ldexp(m, 10))
}

func TestBF16ToFP8Exhaustive(t *testing.T) {
	for v := 0; v < 1<<16; v++ {
		x := bf16Float(uint16(v))
		require.Equal(t, refFP8(x, 3, 7, true, 0x7F), BF16ToE4M3(uint16(v)), "E4M3 of BF16 %#04x (%g)", v, x)
		require.Equal(t, refFP8(x, 2, 15, false, 0x7E), BF16ToE5M2(uint16(v)), "E5M2 of BF16 %#04x (%g)", v, x)
	}
}

func TestBF16ToF16Exhaustive(t *testing.T) {
	for v := 0; v < 1<<16; v++ {
		x := bf16Float(uint16(v))
		require.Equal(t, refF16(x), BF16ToF16(uint16(v)), "F16 of BF16 %#04x (%g)", v, x)
	}
}

func TestBF16ToF32Exhaustive(t *testing.T) {
	for v := 0; v < 1<<16; v++ {
		x := bf16Float(uint16(v))
		got := math.Float32frombits(BF16ToF32(uint16(v)))
		if math.IsNaN(x) {
			require.True(t, math.IsNaN(float64(got)))
			continue
		}
		require.Equal(t, x, float64(got))
		require.Equal(t, math.Signbit(x), math.Signbit(float64(got)))
	}
}

// Spot checks of the definitions themselves, so that a reference sharing a misreading with the code fails too.
func TestFP8Anchors(t *testing.T) {
	bf := func(f float32) uint16 { return uint16(math.Float32bits(f) >> 16) }
	cases := []struct {
		x          float32
		e4m3, e5m2 uint8
	}{
		{1, 0x38, 0x3C},
		{-2, 0xC0, 0xC0},
		{448, 0x7E, 0x5F},                         // E4M3 max; E5M2 448 = 1.75·2^8
		{480, 0x7E, 0x60},                         // above E4M3 max: saturates; E5M2 ties to 512
		{57344, 0x7E, 0x7B},                       // E5M2 max
		{float32(math.Inf(1)), 0x7E, 0x7B},        // saturating: Inf becomes max finite
		{float32(math.Inf(-1)), 0xFE, 0xFB},       //
		{float32(math.Ldexp(1, -9)), 0x01, 0x18},  // E4M3 smallest subnormal
		{float32(math.Ldexp(1, -16)), 0x00, 0x01}, // E5M2 smallest subnormal; E4M3 underflows
		{float32(math.Ldexp(1, -10)), 0x00, 0x14}, // half of E4M3's smallest subnormal: tie to even 0
		{float32(math.Ldexp(3, -11)), 0x01, 0x16}, // 0.75 of E4M3's smallest subnormal: rounds up
		{float32(math.Copysign(0, -1)), 0x80, 0x80},
		{float32(math.NaN()), 0x7F, 0x7E},
	}
	for _, c := range cases {
		require.Equal(t, c.e4m3, BF16ToE4M3(bf(c.x)), "E4M3(%g)", c.x)
		require.Equal(t, c.e5m2, BF16ToE5M2(bf(c.x)), "E5M2(%g)", c.x)
	}
	// 1.125 (BF16 0x3F90) lies halfway between E5M2 1.0 (0x3C) and 1.25 (0x3D): ties to even.
	require.Equal(t, uint8(0x3C), BF16ToE5M2(0x3F90))
	// 1.375 lies halfway between 1.25 (0x3D) and 1.5 (0x3E): ties to even.
	require.Equal(t, uint8(0x3E), BF16ToE5M2(0x3FB0))
	require.Equal(t, uint16(0x7C00), BF16ToF16(bf(65536)), "F16 overflow to Inf")
	require.Equal(t, uint16(0x7BF8), BF16ToF16(bf(65280)), "largest BF16 below 2^16 is exact in F16")
	require.Equal(t, uint16(0x0001), BF16ToF16(bf(float32(math.Ldexp(1, -24)))), "F16 smallest subnormal")
	require.Equal(t, uint16(0x0000), BF16ToF16(bf(float32(math.Ldexp(1, -25)))), "tie to even zero")
}

func TestConvertBF16(t *testing.T) {
	src := KVLike(1000, 3)
	for _, d := range []layout.DType{layout.DTypeF8E4M3, layout.DTypeF8E5M2, layout.DTypeF16, layout.DTypeF32, layout.DTypeBF16} {
		out, err := ConvertBF16(nil, src, d)
		require.NoError(t, err)
		require.Len(t, out, 1000*d.Size())
		v := binary.LittleEndian.Uint16(src[2*7:])
		switch d {
		case layout.DTypeF8E4M3:
			require.Equal(t, BF16ToE4M3(v), out[7])
		case layout.DTypeF16:
			require.Equal(t, BF16ToF16(v), binary.LittleEndian.Uint16(out[14:]))
		case layout.DTypeF32:
			require.Equal(t, BF16ToF32(v), binary.LittleEndian.Uint32(out[28:]))
		}
	}
	_, err := ConvertBF16(nil, src, layout.DTypeI8)
	require.Error(t, err)
	_, err = ConvertBF16(nil, src[:3], layout.DTypeF16)
	require.Error(t, err)
}
