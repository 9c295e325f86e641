// crc_pow.glsl: powers of x for combining CRC-32C registers, from the consts buffer's tables (CONST_XPOW,
// CONST_XINV; POW_FROM in common.glsl).

// xpow returns x^(8·d) (d bytes of zero shift).
uint xpow(uint d) {
    uint r = 0x80000000u;
    POW_FROM(r, d, CONST_XPOW);
    return r;
}

// xinv returns x^(-8·d).
uint xinv(uint d) {
    uint r = 0x80000000u;
    POW_FROM(r, d, CONST_XINV);
    return r;
}
