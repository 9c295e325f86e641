// Package crc32c is CRC-32C (Castagnoli) for vkzip: the standard checksum through hash/crc32 (hardware-accelerated
// where the CPU has it) plus the GF(2) arithmetic that lets checksums of separate pieces be combined. GPU kernels
// checksum a chunk's pieces in parallel and stitch the results together with exactly these operations.
package crc32c

import "hash/crc32"

// Poly is the reflected Castagnoli polynomial.
const Poly = 0x82F63B78

var table = crc32.MakeTable(crc32.Castagnoli)

// Table returns the byte-wise table of the reflected polynomial (entry i = CRC of byte i with a zero register).
func Table() *crc32.Table { return table }

// Checksum is the standard CRC-32C of p.
func Checksum(p []byte) uint32 { return crc32.Checksum(p, table) }

// Update continues a standard CRC-32C (as returned by Checksum) over p.
func Update(crc uint32, p []byte) uint32 { return crc32.Update(crc, table, p) }

// MulMod multiplies a and b as polynomials over GF(2) modulo the CRC polynomial, in the reflected bit order CRC
// registers use (bit 31 is x^0).
func MulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ Poly
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow2k[k] is x^(2^k) mod P in reflected form; x^1 is 1<<30.
var xPow2k [64]uint32

func init() {
	x := uint32(1) << 30
	for k := range xPow2k {
		xPow2k[k] = x
		x = MulMod(x, x)
	}
}

// XPow returns x^n mod P.
func XPow(n uint64) uint32 {
	r := uint32(1) << 31 // x^0
	for k := 0; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			r = MulMod(r, xPow2k[k])
		}
	}
	return r
}

// Shift advances a raw CRC register over n zero bytes: the register of (data || 0^n) from the register of data,
// with no init or final XOR involved.
func Shift(reg uint32, n uint64) uint32 { return MulMod(reg, XPow(8*n)) }

// Combine returns the standard CRC-32C of a||b from crcA = Checksum(a), crcB = Checksum(b) and len(b).
func Combine(crcA, crcB uint32, lenB uint64) uint32 {
	// Standard CRC = raw register with init ^0 and final ^0; the init of b is absorbed by shifting crcA through b.
	return Shift(crcA, lenB) ^ crcB
}

// Linear is the CRC register of p with zero init and no final XOR: linear over GF(2), so pieces can be
// checksummed independently and XORed after shifting.
func Linear(reg uint32, p []byte) uint32 {
	// Standard Update computes ^(table-walk(^reg)); undo both complements to walk from reg itself.
	return ^crc32.Update(^reg, table, p)
}

// Finish turns the linear register of a message of n bytes into its standard CRC-32C.
func Finish(linear uint32, n uint64) uint32 {
	return linear ^ Shift(0xFFFFFFFF, n) ^ 0xFFFFFFFF
}
