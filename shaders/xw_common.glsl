// Shared by the exponent-window kernels (docs/FORMAT.md §13): the format's parameters as specialization
// constants, so one source serves every (format, dtype) pair; CRC-32C helpers; an ordered workgroup prefix sum.
//
// Work is handed out by rank, an invocation's position in (subgroup, lane) order, not by gl_LocalInvocationID: the
// prefix sums below are in that order, and ranking by it makes them follow value order whatever the subgroup size
// and however the driver lays subgroups out.
//
// Needs before inclusion: the kernel's declarations (contracts.glsl: WG, SHIFT, E, M, W, SIZE).

const uint N = 1u << SHIFT;
const uint K = M + 1u;                // rest bits: sign and mantissa
const uint KB = K / 8u;               // rest bytes in the byte stream
const uint KP = K % 8u;               // rest bits in planes
const uint P = W + KP;                // planes per group (at most 7 for the defined pairs)
const uint WIN = (1u << W) - 1u;      // exponents with a code
const uint MAXBASE = (1u << E) - WIN; // largest window base
const uint HP = E - W;                // high exponent planes of a raw group
const uint GPC = N / 32u;             // groups per full chunk
const uint VPW = 4u / SIZE;           // values per 32-bit word
const uint GW = 8u * SIZE;            // value words per group
const uint LW = 8u * KB;              // byte-stream words per group
const uint SBIT = 8u * SIZE - 1u;     // sign bit
const uint ITERS = (GPC + WG - 1u) / WG;

shared uint sgSum[WG];
#ifndef XW_NO_BYTE_CRC
shared uint crcTab[256];
shared uint xpow[32]; // x^(8·2^k) mod P, reflected
#endif

// codedSide and rawSide are the side-piece sizes in bytes (docs/FORMAT.md §13.2.2).
uint codedSide(uint k) { return 4u * E * ((k + 31u) / 32u); }
uint rawSide(uint m) { return 4u * HP * ((m + 31u) / 32u); }

// wgExclusiveAdd returns the sum of v over the invocations of lower rank, and the workgroup's total. Call it in
// uniform control flow.
uint wgExclusiveAdd(uint v, out uint total) {
    uint ex = subgroupExclusiveAdd(v);
    uint tot = subgroupAdd(v);
    barrier();
    if (subgroupElect()) sgSum[gl_SubgroupID] = tot;
    barrier();
    uint base = 0u, all = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) {
        uint x = sgSum[s];
        base += s < gl_SubgroupID ? x : 0u;
        all += x;
    }
    total = all;
    return base + ex;
}

uint wgRank() {
    uint total;
    return wgExclusiveAdd(1u, total);
}

// wgXor XORs v over the workgroup (uniform control flow).
uint wgXor(uint v) {
    uint x = subgroupXor(v);
    barrier();
    if (subgroupElect()) sgSum[gl_SubgroupID] = x;
    barrier();
    uint r = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) r ^= sgSum[s];
    return r;
}

// wgOr ORs v over the workgroup (uniform control flow).
uint wgOr(uint v) {
    uint x = subgroupOr(v);
    barrier();
    if (subgroupElect()) sgSum[gl_SubgroupID] = x;
    barrier();
    uint r = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) r |= sgSum[s];
    return r;
}

#ifndef XW_NO_BYTE_CRC
// initCRC fills the byte table of CRC-32C and the powers x^(8·2^k), these from the consts binding (the host's
// tables for workgroups of P·WG hold them after the tables and KC, KL); a barrier must follow before use.
void initCRC() {
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < 256u; i += WG) {
        uint c = i;
        for (uint b = 0u; b < 8u; b++) c = (c & 1u) != 0u ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crcTab[i] = c;
    }
    if (t < 32u) xpow[t] = consts[5u * 1024u + 2u * P * WG + t];
}

// crcWord runs the (zero-init, no final XOR) CRC register over the 4 bytes of w.
uint crcWord(uint reg, uint w) {
    reg ^= w;
    for (uint b = 0u; b < 4u; b++) reg = crcTab[reg & 255u] ^ (reg >> 8);
    return reg;
}

// shiftBytes multiplies r by x^(8·d): the register after d more zero bytes.
uint shiftBytes(uint r, uint d) {
    for (uint k = 0u; d != 0u; k++, d >>= 1) {
        if ((d & 1u) != 0u) r = mulmod(r, xpow[k]);
    }
    return r;
}
#endif

// A group's 32 values seen through their top bytes (tb): for 1- and 2-byte values the byte holding the sign, the
// exponent and the top KP-1 mantissa bits (sign bit 7, exponent bits XLO..XLO+E-1, mantissa bits 8·KB.. below); for
// 4-byte values the exponent byte alone. Transposed, the tb bytes of a group are 8 bit planes: plane XLO+e is bit e
// of the exponents, planes 0..KP-2 and 7 the rest bits that go to the plane stream.
const uint XLO = SIZE == 4u ? 0u : KP - 1u;
const uint EMASK = (1u << E) - 1u;

// tr8 transposes the 8×8 bit matrix whose row i is byte i of the 64-bit (lo, hi): bit j of byte i moves to bit i
// of byte j (Hacker's Delight 7-3, with the 64-bit shifts split into 32-bit halves).
void tr8(inout uint lo, inout uint hi) {
    uint t = (lo ^ (lo >> 7)) & 0x00AA00AAu;
    lo ^= t ^ (t << 7);
    t = (hi ^ (hi >> 7)) & 0x00AA00AAu;
    hi ^= t ^ (t << 7);
    t = (lo ^ (lo >> 14)) & 0x0000CCCCu;
    lo ^= t ^ (t << 14);
    t = (hi ^ (hi >> 14)) & 0x0000CCCCu;
    hi ^= t ^ (t << 14);
    t = (lo ^ (hi << 4)) & 0xF0F0F0F0u;
    lo ^= t;
    hi ^= t >> 4;
}

// tr4 transposes the 4×4 byte matrix whose row i is word ai: byte j of ai moves to byte i of aj.
void tr4(inout uint a0, inout uint a1, inout uint a2, inout uint a3) {
    uint t0 = (a0 & 0x00FF00FFu) | ((a1 & 0x00FF00FFu) << 8);
    uint t1 = ((a0 >> 8) & 0x00FF00FFu) | (a1 & 0xFF00FF00u);
    uint t2 = (a2 & 0x00FF00FFu) | ((a3 & 0x00FF00FFu) << 8);
    uint t3 = ((a2 >> 8) & 0x00FF00FFu) | (a3 & 0xFF00FF00u);
    a0 = (t0 & 0xFFFFu) | (t2 << 16);
    a1 = (t1 & 0xFFFFu) | (t3 << 16);
    a2 = (t0 >> 16) | (t2 & 0xFFFF0000u);
    a3 = (t1 >> 16) | (t3 & 0xFFFF0000u);
}

// bytesToPlanes turns a group's 8 tb words (value 4q+j's byte at byte j of word q) into its 8 bit planes (bit i of
// plane b is bit b of value i's byte), in place; planesToBytes is its inverse.
void bytesToPlanes(inout uint b[8]) {
    [[unroll]] for (uint k = 0u; k < 4u; k++) tr8(b[2u * k], b[2u * k + 1u]);
    tr4(b[0], b[2], b[4], b[6]); // planes 0-3
    tr4(b[1], b[3], b[5], b[7]); // planes 4-7
    uint p[8] = uint[8](b[0], b[2], b[4], b[6], b[1], b[3], b[5], b[7]);
    b = p;
}

void planesToBytes(inout uint p[8]) {
    uint b[8] = uint[8](p[0], p[4], p[1], p[5], p[2], p[6], p[3], p[7]);
    tr4(b[0], b[2], b[4], b[6]);
    tr4(b[1], b[3], b[5], b[7]);
    [[unroll]] for (uint k = 0u; k < 4u; k++) tr8(b[2u * k], b[2u * k + 1u]);
    p = b;
}

// restPlane is the tb plane that holds rest plane q (plane W+q of the stream) of a 1- or 2-byte value.
uint restPlane(uint q) { return q + 1u == KP ? 7u : q; }

// tbWord is tb word q of a group from its value words v (GW of them).
#define TB_WORD(v, q) (SIZE == 1u ? v[q] : (SIZE == 2u \
    ? (((v[2u * (q)] >> 8) & 0xFFu) | ((v[2u * (q)] >> 16) & 0xFF00u) | ((v[2u * (q) + 1u] << 8) & 0xFF0000u) \
       | (v[2u * (q) + 1u] & 0xFF000000u)) \
    : (((v[4u * (q)] >> 23) & 0xFFu) | (((v[4u * (q) + 1u] >> 23) & 0xFFu) << 8) \
       | (((v[4u * (q) + 2u] >> 23) & 0xFFu) << 16) | (((v[4u * (q) + 3u] >> 23) & 0xFFu) << 24))))

#ifdef XW_DENSE_CRC
// The dense pieces' CRC-32C, summed in the coding loop (docs/FORMAT.md §13.2.5). Each invocation folds its groups
// in order: u, a group's words by Horner over M^4, then A = M^(4·P·WG)(A) ^ u (plane piece; byte piece likewise
// with LW words per group). A piece's linear CRC (zero start, register after the piece) is then the XOR over
// invocations r of A_r · x^(8·(group bytes·(WG-1-r) + 4)): the constant KC[P·r+P-1] of the CRC tables built for
// workgroups of P·WG, and KL[LW/2·(r+1)-1] of those built for workgroups of LW·WG/2 (codec/vkcodec's crcConsts:
// tables of CRC_BITS-bit fields, 1024 words each, then KC and KL). Groups a chunk lacks count as zero words at its
// end, which the last chunk's constants shift back out.
#include "crc_fields.glsl"
const uint TAB_W4 = 0u;  // M^4
const uint TAB_GP = 1u;  // M^(4·P·WG): one round of plane groups
const uint TAB_GL = 2u;  // M^(4·LW·WG): one round of byte-stream groups
const uint CT0 = 5u * 1024u; // first KC word
shared uint ctab[3u * CRC_TAB];

void loadCRCTables() {
    for (uint i = gl_LocalInvocationID.x; i < CRC_TAB; i += WG) {
        ctab[i] = consts[i];
        ctab[CRC_TAB + i] = consts[1024u + i];
        ctab[2u * CRC_TAB + i] = KB == 0u ? 0u : lconsts[2u * 1024u + i];
    }
}

uint shiftTab(uint tab, uint r) {
    uint x;
    CRC_LOOKUP(x, ctab, tab * CRC_TAB, 1u, r);
    return x;
}

// kcPlanes and kcLows are invocation r's final multipliers of its plane and byte-stream sums.
uint kcPlanes(uint r) { return consts[CT0 + P * r + P - 1u]; }
uint kcLows(uint r) { return lconsts[CT0 + LW * WG / 2u + (LW / 2u) * (r + 1u) - 1u]; }
#endif

#ifdef XW_HS_CRC
// The header and side piece's CRC-32C (info, offset, side words; the kernel defines msgWord) over 32 invocations:
// word q goes to invocation q mod 32 after zero words in front up to a multiple of 32 (leading zeros leave the sum
// unchanged; the register's start ~0 is folded into the first real word), each invocation folds its words by Horner
// over M^128 and multiplies its sum by KC[t] = x^(32·(32-t)) (codec/vkcodec's crcConsts for workgroups of 32).
shared uint htab[CRC_TAB]; // M^128

void loadHTable() {
    for (uint i = gl_LocalInvocationID.x; i < CRC_TAB; i += WG) htab[i] = hconsts[1024u + i];
}

uint msgWord(uint q);

// hsCRC returns the CRC register, started at ~0, after the chunk's header and side words (words of them; uniform
// control flow: it ends with a workgroup reduction).
uint hsCRC(uint words) {
    uint t = gl_LocalInvocationID.x;
    uint a = 0u;
    if (t < 32u) {
        uint pad = (32u - words % 32u) % 32u;
        for (uint q = t; q < words + pad; q += 32u) {
            uint w = q < pad ? 0u : msgWord(q - pad) ^ (q == pad ? 0xFFFFFFFFu : 0u);
            uint x;
            CRC_LOOKUP(x, htab, 0u, 1u, a);
            a = x ^ w;
        }
        a = mulmod(a, hconsts[5u * 1024u + t]);
    }
    return wgXor(a);
}
#endif
