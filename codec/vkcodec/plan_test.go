package vkcodec

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

func TestXInv(t *testing.T) {
	x := uint32(1) << 30
	require.Equal(t, uint32(1)<<31, crc32c.MulMod(x, xInv))
	for _, n := range []uint64{1, 8, 1000, 123456} {
		require.Equal(t, uint32(1)<<31, crc32c.MulMod(crc32c.XPow(n), xInvPow(n)))
	}
}

// shiftBits applies a table built by shiftTable with fields of bits bits, as the kernels do.
func shiftBits(tab []uint32, r uint32, bits int) uint32 {
	x := uint32(0)
	for f := 0; f*bits < 32; f++ {
		x ^= tab[f<<bits+int(r>>(f*bits)&(1<<bits-1))]
	}
	return x
}

// shift applies a table of byte fields.
func shift(tab []uint32, r uint32) uint32 { return shiftBits(tab, r, 8) }

func TestShiftTables(t *testing.T) {
	for bits := minCRCBits; bits <= maxCRCBits; bits++ {
		require.LessOrEqual(t, crcTableWords(bits), uint32(1024), "a table fits its slot")
		c := crcConsts(64, 10, bits)
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 100; i++ {
			w := r.Uint32()
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], w)
			// M^4 of a word is the linear CRC of its four bytes.
			require.Equal(t, crc32c.Linear(0, b[:]), shiftBits(c[0:1024], w, bits), "bits %d", bits)
			require.Equal(t, crc32c.Shift(w, 4*64), shiftBits(c[1024:2048], w, bits), "bits %d", bits)
			require.Equal(t, crc32c.Shift(w, 8*64), shiftBits(c[2048:3072], w, bits), "bits %d", bits)
			require.Equal(t, crc32c.Shift(w, 512), shiftBits(c[3072:4096], w, bits), "bits %d", bits)
			require.Equal(t, crc32c.Shift(w, 1024), shiftBits(c[4096:5120], w, bits), "bits %d", bits)
		}
		// The top register bits reach the last field's table.
		require.Equal(t, crc32c.Shift(0xC0000000, 4*64), shiftBits(c[1024:2048], 0xC0000000, bits))
	}
}

// emulateChunkCRC computes a chunk's CRC the way sz4_encode/sz4_place/sz4_decode do: Horner sums per thread over
// strided words, per-thread shifts, an XOR reduction, the last chunk's zero-padding correction, then the header.
func emulateChunkCRC(wg int, shift_ uint, last bool, m int, code, low, head []byte) uint32 {
	c := crcConsts(wg, shift_, 8)
	n := 1 << shift_
	slots := n / 8
	iters := slots / wg
	word := func(b []byte, i int) uint32 {
		if 4*i+4 > len(b) {
			return 0
		}
		return binary.LittleEndian.Uint32(b[4*i:])
	}
	var linC, linL uint32
	for t := 0; t < wg; t++ {
		var aC, aL0, aL1 uint32
		for j := 0; j < iters; j++ {
			s := j*wg + t
			aC = shift(c[1024:2048], aC) ^ word(code, s)
			aL0 = shift(c[2048:3072], aL0) ^ word(low, 2*s)
			aL1 = shift(c[2048:3072], aL1) ^ word(low, 2*s+1)
		}
		linC ^= crc32c.MulMod(aC, c[nTables*1024+t])
		linL ^= crc32c.MulMod(shift(c[0:1024], aL0)^aL1, c[nTables*1024+wg+t])
	}
	g := layout.SZ4{N: uint64(m), Shift: shift_}
	tc := newTensorConsts(g.N, shift_)
	if last {
		linC = crc32c.MulMod(linC, tc.invC)
		linL = crc32c.MulMod(linL, tc.invL)
	}
	sh, kd := tc.shLowFull, tc.kdFull
	if last {
		sh, kd = tc.shLowLast, tc.kdLast
	}
	reg := uint32(0xFFFFFFFF)
	for q := 0; q < len(head)/4; q++ {
		reg = shift(c[0:1024], reg^word(head, q))
	}
	if !last { // full chunks use the M^(n/2) and M^n tables, as the kernels do
		return shift(c[4096:5120], shift(c[3072:4096], reg)^linC) ^ linL ^ 0xFFFFFFFF
	}
	linD := crc32c.MulMod(linC, sh) ^ linL
	return crc32c.MulMod(reg, kd) ^ linD ^ 0xFFFFFFFF
}

func TestEmulatedChunkCRC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for _, wg := range []int{32, 64, 128} {
		for _, sh := range []uint{10, 12} {
			n := 1 << sh
			for _, m := range []int{n, n - 1, n / 2, 5, 1, 8, 9, 4} {
				code := fill(int(layout.Align4(uint64(m+1) / 2)))
				low := fill(int(layout.Align4(uint64(m))))
				head := fill(8 + 4*r.IntN(20))
				want := crc32c.Update(crc32c.Update(crc32c.Checksum(head), code), low)
				got := emulateChunkCRC(wg, sh, m != n, m, code, low, head)
				require.Equal(t, want, got, "wg %d shift %d m %d", wg, sh, m)
			}
		}
	}
}
