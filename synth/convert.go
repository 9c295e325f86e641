package synth

import (
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
)

// Conversions from BF16 to the other float dtypes, used to derive FP8, FP16 and FP32 test data from the BF16 KV
// corpus (there is no real FP8 KV data in the shared corpus). docs/formats/fp8-derivation.md is the specification;
// in short:
//
//   - F8_E4M3 (OCP "E4M3FN": bias 7, no infinities, max 448, NaN = S.1111.111) and F8_E5M2 (OCP, IEEE-like: bias
//     15, max 57344): round to nearest, ties to even, then saturate: a result above the largest finite value, and
//     ±Inf, become ±max finite (CUDA's __NV_SATFINITE). NaN becomes the dtype's canonical quiet NaN with the sign
//     kept (E4M3 S.1111.111, E5M2 S.11111.10).
//   - F16 (IEEE binary16): round to nearest, ties to even, overflow to ±Inf (IEEE 754 default, torch .half());
//     NaN becomes S.11111.1000000000.
//   - F32: exact widening (the BF16 bits followed by 16 zero bits).
//
// Zeros and results that round to zero keep their sign.

// smallFloat describes a binary float format of at most 16 bits with a sign bit on top.
type smallFloat struct {
	man, bias int    // mantissa bits, exponent bias
	maxCode   uint32 // magnitude code of the largest finite value
	saturate  bool   // overflow to maxCode (true) or to infCode
	infCode   uint32 // magnitude code of infinity (unused when saturating)
	nanCode   uint32 // magnitude code of the canonical NaN
	bits      uint   // total width; the sign is bit bits-1
}

var (
	fmtE4M3 = smallFloat{man: 3, bias: 7, maxCode: 0x7E, saturate: true, nanCode: 0x7F, bits: 8}
	fmtE5M2 = smallFloat{man: 2, bias: 15, maxCode: 0x7B, saturate: true, nanCode: 0x7E, bits: 8}
	fmtF16  = smallFloat{man: 10, bias: 15, maxCode: 0x7BFF, infCode: 0x7C00, nanCode: 0x7E00, bits: 16}
)

// round converts a BF16 value. It rounds the value's integer significand at the target's quantum (the weight of
// the target mantissa's last bit at the value's exponent, never below the subnormal quantum) and relies on one
// identity: a value r·2^q of the target, with q its quantum, has magnitude code ((q+man+bias-1) << man) + r, which
// covers subnormals (q+man+bias-1 = 0) and a carry out of the mantissa (r = 2^(man+1)) alike.
func (f *smallFloat) round(v uint16) uint32 {
	sign := uint32(v>>15) << (f.bits - 1)
	e, m := int(v>>7&0xFF), uint32(v&0x7F)
	switch {
	case e == 0xFF && m != 0:
		return sign | f.nanCode
	case e == 0xFF:
		if f.saturate {
			return sign | f.maxCode
		}
		return sign | f.infCode
	case e == 0 && m == 0:
		return sign
	}
	sig := m // value = sig · 2^(ee-134)
	ee := e
	if e == 0 {
		ee = 1
	} else {
		sig |= 0x80
	}
	q := max(ee-127, 1-f.bias) - f.man // target quantum exponent
	d := q - (ee - 134)                // right shift of sig onto that quantum
	var r uint32
	switch {
	case d <= 0:
		r = sig << -d // exact (the target has at least as many mantissa bits)
	case d >= 16:
		r = 0 // below a quarter of the quantum: sig < 2^8
	default:
		r = sig >> d
		rem, half := sig&(1<<d-1), uint32(1)<<(d-1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
	}
	if r == 0 {
		return sign
	}
	code := uint32(q+f.man+f.bias-1)<<f.man + r
	if code > f.maxCode {
		if f.saturate {
			code = f.maxCode
		} else {
			code = f.infCode
		}
	}
	return sign | code
}

// BF16ToE4M3 converts a BF16 value to OCP FP8 E4M3 (round to nearest even, saturating).
func BF16ToE4M3(v uint16) uint8 { return uint8(fmtE4M3.round(v)) }

// BF16ToE5M2 converts a BF16 value to OCP FP8 E5M2 (round to nearest even, saturating).
func BF16ToE5M2(v uint16) uint8 { return uint8(fmtE5M2.round(v)) }

// BF16ToF16 converts a BF16 value to IEEE binary16 (round to nearest even, overflow to infinity).
func BF16ToF16(v uint16) uint16 { return uint16(fmtF16.round(v)) }

// BF16ToF32 widens a BF16 value to IEEE binary32, exactly.
func BF16ToF32(v uint16) uint32 { return uint32(v) << 16 }

// ConvertBF16 converts little-endian BF16 values (len(src) even) to dtype to, appending to dst.
func ConvertBF16(dst, src []byte, to layout.DType) ([]byte, error) {
	if len(src)%2 != 0 {
		return dst, fmt.Errorf("synth: %d bytes of BF16 is not a whole number of values", len(src))
	}
	n := len(src) / 2
	for i := 0; i < n; i++ {
		v := binary.LittleEndian.Uint16(src[2*i:])
		switch to {
		case layout.DTypeF8E4M3:
			dst = append(dst, BF16ToE4M3(v))
		case layout.DTypeF8E5M2:
			dst = append(dst, BF16ToE5M2(v))
		case layout.DTypeF16:
			dst = binary.LittleEndian.AppendUint16(dst, BF16ToF16(v))
		case layout.DTypeF32:
			dst = binary.LittleEndian.AppendUint32(dst, BF16ToF32(v))
		case layout.DTypeBF16:
			dst = binary.LittleEndian.AppendUint16(dst, v)
		default:
			return dst, fmt.Errorf("synth: no conversion from BF16 to %v", to)
		}
	}
	return dst, nil
}
