// Host-side arithmetic the kernels need (no cgo, so it is testable everywhere): CRC shift tables and constants,
// and the per-tensor push-constant values.

package vkcodec

import (
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// xInv is x^-1 modulo the CRC polynomial, reflected: P = x·Q + 1, so x·Q ≡ 1 and Q = (P - 1)/x.
var xInv = func() uint32 {
	const pNormal = 0x1EDC6F41 // P without its x^32 term, normal bit order
	q := uint32(pNormal>>1) | 1<<31
	// Reflect: bit i of the normal form is x^i; reflected bit 31-i is x^i.
	var r uint32
	for i := 0; i < 32; i++ {
		if q>>i&1 != 0 {
			r |= 1 << (31 - i)
		}
	}
	return r
}()

// xInvPow returns x^-n.
func xInvPow(n uint64) uint32 {
	r, b := uint32(1)<<31, xInv
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			r = crc32c.MulMod(r, b)
		}
		b = crc32c.MulMod(b, b)
	}
	return r
}

// The kernels shift a CRC register by a fixed power of x as the XOR of one table lookup per field of bits bits
// (shaders/crc_tables.glsl and huff_common.glsl, spec constant crcBitsSpecID; Backend.crcBits picks the width per
// kernel). Tables of at most 32 entries lie in distinct shared-memory banks, so their lookups never conflict, but a
// shift takes more of them.
const (
	crcBitsSpecID = 8
	minCRCBits    = 4
	maxCRCBits    = 8
)

// crcTableWords is the size of one shift table with fields of bits bits: ceil(32/bits) tables of 2^bits entries.
func crcTableWords(bits int) uint32 { return uint32((32+bits-1)/bits) << bits }

// shiftTable fills crcTableWords(bits) words: entry [f][v] is the register v<<(bits·f) shifted over d zero bytes,
// so that the shift of any register is the XOR of one lookup per field (entries past the last field's width stay 0).
func shiftTable(dst []uint32, d uint64, bits int) {
	k := crc32c.XPow(8 * d)
	for f := 0; f*bits < 32; f++ {
		width := min(bits, 32-f*bits)
		for v := 0; v < 1<<width; v++ {
			dst[f<<bits+v] = crc32c.MulMod(uint32(v)<<(bits*f), k)
		}
	}
}

// nTables is the number of shift tables at the start of the consts buffer, each in a slot of 1024 words.
const nTables = 5

// crcConsts builds the consts buffer of the kernels for workgroups of wg threads, chunks of 2^shift values and
// shift tables of bits-bit fields (shaders/crc_tables.glsl): M^4, M^(4wg), M^(8wg), M^(n/2), M^n tables, per-thread
// final shifts KC and KL, and x^(±8·2^k).
func crcConsts(wg int, shift uint, bits int) []uint32 {
	const t0 = nTables * 1024
	c := make([]uint32, t0+2*wg+64)
	n := uint64(1) << shift
	for i, d := range []uint64{4, 4 * uint64(wg), 8 * uint64(wg), n / 2, n} {
		shiftTable(c[1024*i:1024*(i+1)], d, bits)
	}
	for t := 0; t < wg; t++ {
		c[t0+t] = crc32c.XPow(32 * uint64(wg-t))
		c[t0+wg+t] = crc32c.XPow(8 * (8*uint64(wg-t) - 4))
	}
	base := t0 + 2*wg
	for k := 0; k < 32; k++ {
		c[base+k] = crc32c.XPow(8 << k)
		c[base+32+k] = xInvPow(8 << k)
	}
	return c
}

// tensorConsts are the per-tensor push-constant values shared by encode and decode.
type tensorConsts struct {
	chunks    uint32
	lastLen   uint32
	invC      uint32 // x^-(8·missing code bytes of the last chunk's piece)
	invL      uint32 // x^-(8·missing low bytes)
	shLowFull uint32 // x^(8·n)
	shLowLast uint32 // x^(8·align4(lastLen))
	kdFull    uint32 // x^(8·|code piece|+|low piece|) of a full chunk
	kdLast    uint32 // of the last chunk
}

func newTensorConsts(n uint64, shift uint) tensorConsts {
	g := layout.SZ4{N: n, Shift: shift}
	cv := g.ChunkValues()
	c := g.Chunks()
	last := g.ChunkLen(c - 1)
	codeLast := g.CodeBytes() - (c-1)*cv/2
	lowLast := g.LowBytes() - (c-1)*cv
	return tensorConsts{
		chunks:    uint32(c),
		lastLen:   uint32(last),
		invC:      xInvPow(8 * (cv/2 - codeLast)),
		invL:      xInvPow(8 * (cv - lowLast)),
		shLowFull: crc32c.XPow(8 * cv),
		shLowLast: crc32c.XPow(8 * lowLast),
		kdFull:    crc32c.XPow(8 * (cv/2 + cv)),
		kdLast:    crc32c.XPow(8 * (codeLast + lowLast)),
	}
}
