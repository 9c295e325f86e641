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
shared uint crcTab[256];
shared uint xpow[32]; // x^(8·2^k) mod P, reflected

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

// initCRC fills the byte table of CRC-32C and the powers x^(8·2^k); a barrier must follow before use.
void initCRC() {
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < 256u; i += WG) {
        uint c = i;
        for (uint b = 0u; b < 8u; b++) c = (c & 1u) != 0u ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crcTab[i] = c;
    }
    if (t == 0u) {
        uint x = 0x00800000u; // x^8: bit 31 is x^0
        for (uint k = 0u; k < 32u; k++) {
            xpow[k] = x;
            x = mulmod(x, x);
        }
    }
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
