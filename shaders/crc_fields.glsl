// Field arithmetic of the CRC shift tables, shared by crc_tables.glsl and huff_common.glsl: a register is shifted by
// a fixed power of x as the XOR of one table lookup per CRC_BITS-bit field of the register, table f holding
// 2^CRC_BITS entries from word f << CRC_BITS (codec/vkcodec's shiftTable builds them). The includer declares CRC_BITS
// (specialization constant 8, which codec/vkcodec sets for every kernel: Backend.crcBits).
const uint CRC_FIELDS = (32u + CRC_BITS - 1u) / CRC_BITS;
const uint CRC_MASK = (1u << CRC_BITS) - 1u;
const uint CRC_TAB = CRC_FIELDS << CRC_BITS; // words of one shift's tables

// CRC_LOOKUP sets x to the shift of register r by the tables at arr[base], each entry stride words apart.
#define CRC_LOOKUP(x, arr, base, stride, r) { \
    x = arr[(base) + ((r) & CRC_MASK) * (stride)]; \
    [[unroll]] for (uint _f = 1u; _f < CRC_FIELDS; _f++) \
        x ^= arr[(base) + ((_f << CRC_BITS) + (((r) >> (_f * CRC_BITS)) & CRC_MASK)) * (stride)]; \
}
