// Helpers shared by the SplitZip-4 kernels: CRC-32C arithmetic and BF16 byte shuffles.
//
// CRC registers are "linear" here (zero init, no final XOR) and reflected: bit 31 is x^0. M^D(r) is r shifted over D
// zero bytes, i.e. r·x^(8D) mod P. Fixed shifts are applied with table lookups (crc_tables.glsl: one table per
// CRC_BITS-bit field of the register, built by the host); anything else uses mulmod.

// mulmod multiplies two reflected polynomials modulo the CRC-32C polynomial.
uint mulmod(uint a, uint b) {
    uint p = 0u;
    for (uint m = 0x80000000u; m != 0u; m >>= 1) {
        if ((a & m) != 0u) p ^= b;
        b = (b & 1u) != 0u ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return p;
}

// powFrom multiplies x^(8·d) into r using the table pw[k] = x^(8·2^k), read from consts at offset base.
#define POW_FROM(r, d, base) { uint _d = (d); for (uint _k = 0u; _d != 0u; _k++, _d >>= 1) \
    if ((_d & 1u) != 0u) r = mulmod(r, consts[(base) + _k]); }

// The low byte kept by SplitZip-4 of the two values in a word, packed into the low 16 bits.
uint lows2(uint w) {
    uint t = (w & 0x007F007Fu) | ((w >> 8) & 0x00800080u);
    return (t | (t >> 8)) & 0xFFFFu;
}

// Spread two kept low bytes (bits 0-15) back to the sign and mantissa bits of two BF16 values.
uint spread2(uint l) {
    uint t = (l & 0xFFu) | ((l & 0xFF00u) << 8);
    return (t & 0x007F007Fu) | ((t & 0x00800080u) << 8);
}
