// Shared by the huff kernels (docs/FORMAT.md §14): the chunk size, the code construction of §14.3 (one invocation
// builds a chunk's code in shared memory, exactly as codec/huff.go does), and CRC-32C helpers.

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 32;    // invocations per workgroup (a multiple of 32)
layout(constant_id = 1) const uint SHIFT = 14; // chunk = 2^SHIFT values

const uint N = 1u << SHIFT;
const uint LANES = HUFF_LANES;
const uint PMAX = N / LANES; // positions of a full chunk's lanes

shared uint cnt[256];  // histogram (the length limiter halves it in place)
shared uint lens[256]; // code lengths, 0 for absent symbols
shared uint rc[256];   // bit-reversed code | length << 16
shared uint keys[256];
shared uint wq[256];
shared uint par[512];
shared uint dep[256];
shared uint sLo, sHi;
shared uint sgRed[WG];
shared uint crcTab[256];
shared uint xpow[32];

uint hweight(uint x) { return x < 256u ? keys[x] >> 8 : wq[x - 256u]; }

// buildLengths: one invocation. cnt holds the histogram of a chunk's exponents (at least one non-zero); it writes
// lens, sLo and sHi: Huffman's algorithm by two queues over the present symbols sorted by (count, symbol), a leaf
// winning ties against an internal node, counts halved (never below 1) while a code is longer than 11 bits.
void buildLengths() {
    for (;;) {
        uint n = 0u;
        for (uint s = 0u; s < 256u; s++) {
            uint c = cnt[s];
            lens[s] = 0u;
            if (c == 0u) continue;
            uint key = (c << 8) | s;
            uint i = n;
            while (i > 0u && keys[i - 1u] > key) {
                keys[i] = keys[i - 1u];
                i--;
            }
            keys[i] = key;
            n++;
        }
        if (n <= 1u) {
            uint s = keys[0] & 255u;
            lens[s] = 1u;
            sLo = s;
            sHi = s;
            return;
        }
        uint leaf = 0u, head = 0u;
        for (uint k = 0u; k + 1u < n; k++) {
            uint a, b;
            if (leaf < n && (head >= k || (keys[leaf] >> 8) <= wq[head])) { a = leaf; leaf++; } else { a = 256u + head; head++; }
            if (leaf < n && (head >= k || (keys[leaf] >> 8) <= wq[head])) { b = leaf; leaf++; } else { b = 256u + head; head++; }
            wq[k] = hweight(a) + hweight(b);
            par[a] = k;
            par[b] = k;
        }
        dep[n - 2u] = 0u;
        for (uint k = n - 2u; k > 0u; k--) dep[k - 1u] = dep[par[256u + k - 1u]] + 1u;
        uint longest = 0u, lo = 255u, hi = 0u;
        for (uint i = 0u; i < n; i++) {
            uint s = keys[i] & 255u;
            uint l = dep[par[i]] + 1u;
            lens[s] = l;
            longest = max(longest, l);
            lo = min(lo, s);
            hi = max(hi, s);
        }
        sLo = lo;
        sHi = hi;
        if (longest <= HUFF_MAX_LEN) return;
        for (uint s = 0u; s < 256u; s++) {
            if (cnt[s] != 0u) cnt[s] = max(1u, cnt[s] >> 1);
        }
    }
}

// canonical: one invocation. Canonical codes from lens over [sLo, sHi] (RFC 1951 §3.2.2), bit-reversed into rc.
void canonical() {
    uint bl[HUFF_MAX_LEN + 1u];
    for (uint l = 0u; l <= HUFF_MAX_LEN; l++) bl[l] = 0u;
    for (uint s = sLo; s <= sHi; s++) bl[min(lens[s], HUFF_MAX_LEN)]++;
    bl[0] = 0u;
    uint nx[HUFF_MAX_LEN + 1u];
    uint code = 0u;
    nx[0] = 0u;
    for (uint l = 1u; l <= HUFF_MAX_LEN; l++) {
        code = (code + bl[l - 1u]) << 1;
        nx[l] = code;
    }
    for (uint s = sLo; s <= sHi; s++) {
        uint l = min(lens[s], HUFF_MAX_LEN);
        rc[s] = 0u;
        if (l == 0u) continue;
        rc[s] = (bitfieldReverse(nx[l]) >> (32u - l)) | (l << 16);
        nx[l]++;
    }
}

// tableBytes is the code table's size for symbols lo..hi.
uint tableBytes(uint lo, uint hi) { return ((2u + (hi - lo + 2u) / 2u) + 3u) & ~3u; }

// laneValues is the number of values of lane l in a chunk of m values.
uint laneValues(uint m, uint l) { return l >= m ? 0u : (m - l + LANES - 1u) / LANES; }

// wgXor XORs v over the workgroup (uniform control flow).
uint wgXor(uint v) {
    uint t = gl_LocalInvocationID.x;
    barrier();
    sgRed[t] = v;
    barrier();
    uint r = 0u;
    for (uint i = 0u; i < WG; i++) r ^= sgRed[i];
    barrier();
    return r;
}

// wgOr ORs v over the workgroup (uniform control flow).
uint wgOr(uint v) {
    uint t = gl_LocalInvocationID.x;
    barrier();
    sgRed[t] = v;
    barrier();
    uint r = 0u;
    for (uint i = 0u; i < WG; i++) r |= sgRed[i];
    barrier();
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
