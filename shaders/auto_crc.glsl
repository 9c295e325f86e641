// CRC helpers of the auto piece encoders (auto_sz4, auto_zf12, auto_tbe3): after common.glsl and crc_tables.glsl.
// A chunk's CRC-32C covers its info word, its side offset (0 in a one-chunk piece), a variable part and then its
// dense pieces (docs/FORMAT.md §5.6, §10.4, §12.7); the kernels sum the dense pieces' linear CRC while they write
// them and fold it in at the end.

shared uint red[2u * WG]; // per-subgroup partial results; scans use 2·WG words
shared uint carry;        // running total of an ordered scan

#include "crc_pow.glsl"

// wgXor returns the XOR of v over the workgroup to every invocation. Uniform control flow.
uint wgXor(uint v) {
    v = subgroupXor(v);
    barrier(); // red is free
    if (subgroupElect()) red[gl_SubgroupID] = v;
    barrier();
    uint x = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) x ^= red[s];
    barrier();
    return x;
}

#include "wg_scan.glsl"

// HEAD_CRC sets result to the chunk's CRC-32C: the standard register after info, a zero side offset and the
// `words` words read through the macro HEAD_WORD(q) (q < words), shifted over dense bytes and combined with the
// dense pieces' linear CRC lin. Every invocation calls it (uniform); invocation 0 gets the result.
#define HEAD_CRC(result, info, words, dense, lin) { \
    uint _n = 2u + (words); \
    uint _iters = (_n + WG - 1u) / WG, _pad = _iters * WG - _n; \
    uint _a = 0u; \
    for (uint _j = 0u; _j < _iters; _j++) { \
        uint _q = _j * WG + gl_LocalInvocationID.x; \
        uint _w = 0u; \
        if (_q >= _pad) { \
            uint _r = _q - _pad; \
            _w = _r == 0u ? ~(info) : (_r == 1u ? 0u : HEAD_WORD(_r - 2u)); \
        } \
        _a = shiftBy(TAB_M4T, _a) ^ _w; \
    } \
    uint _reg = wgXor(mulmod(_a, consts[CONST_KC + gl_LocalInvocationID.x])); \
    result = mulmod(_reg, xpow(dense)) ^ (lin) ^ 0xFFFFFFFFu; \
}

// storePair writes a and, if both, b to the words at w and w+1 of out: one 8-byte store where w is even.
void storePair(uint w, uint a, uint b, bool both) {
    if (both && (w & 1u) == 0u) {
        outv2[w >> 1] = uvec2(a, b);
    } else {
        outw[w] = a;
        if (both) outw[w + 1u] = b;
    }
}

shared uint offSum;

// pieceOffset returns chunk c's piece offset, in bytes from the first piece: from auto_size's work words, the sums
// of the 4,096-chunk blocks before c's, of the 64-chunk blocks before c's in its 4,096, and the sizes of the chunks
// before c in its 64 (at most 63 words each but the first: c/4096 ≤ 1,024 words for the most chunks a body can
// have). Uniform control flow.
uint pieceOffset(uint c, uint C) {
    uint t = gl_LocalInvocationID.x, v = 0u;
    for (uint b = t; b < (c >> 12); b += WG) v += work[sumsL2(C) + b];
    for (uint b = ((c >> 12) << 6) + t; b < (c >> 6); b += WG) v += work[sumsL1(C) + b];
    for (uint c2 = (c & ~63u) + t; c2 < c; c2 += WG) v += work[c2];
    barrier(); // the previous chunk's readers of offSum are done
    if (t == 0u) offSum = 0u;
    barrier();
    if (v != 0u) atomicAdd(offSum, v);
    barrier();
    return offSum;
}

// autoEntryCRC is the CRC-32C of an auto table entry's info and offset words (FORMAT.md §11.1).
uint autoEntryCRC(uint info, uint off4) {
    return shiftBy(TAB_M4, shiftBy(TAB_M4, 0xFFFFFFFFu ^ info) ^ off4) ^ 0xFFFFFFFFu;
}
