// Shared by the huff kernels (docs/FORMAT.md §14): the chunk size, the code construction of §14.3 (a workgroup
// builds a chunk's code in shared memory, exactly as codec/huff.go does), and CRC-32C helpers.

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 32;    // invocations per workgroup (a multiple of 32)
layout(constant_id = 1) const uint SHIFT = 14; // chunk = 2^SHIFT values

const uint N = 1u << SHIFT;
const uint LANES = HUFF_LANES;
const uint PMAX = N / LANES; // positions of a full chunk's lanes

// The code construction's arrays: its own, or rows of an includer's 2-D array HUFF_ARENA of HUFF_ARENA_ROWS rows of
// 256 words (huff_decode lends its decode tables, idle while it checks raw chunks).
#ifdef HUFF_ARENA
shared uint HUFF_ARENA[HUFF_ARENA_ROWS][256];
#define cnt HUFF_ARENA[0]
#define lens HUFF_ARENA[1]
#define keys HUFF_ARENA[2]
#define wq HUFF_ARENA[3]
#define parL HUFF_ARENA[4]
#define parI HUFF_ARENA[5]
#define dep HUFF_ARENA[6]
#else
shared uint cnt[256];  // histogram (the length limiter halves it in place)
shared uint lens[256]; // code lengths, 0 for absent symbols
shared uint keys[256]; // present symbols as count << 8 | symbol, ascending
shared uint wq[256];   // internal node weights, in creation order
shared uint parL[256]; // parent (internal node) of leaf i
shared uint parI[256]; // parent of internal node k
shared uint dep[256];  // depth of internal node k
#endif
shared uint rc[256];   // bit-reversed code | length << 16
shared uint sLo, sHi;

uint hweight(uint x) { return x < 256u ? keys[x] >> 8 : wq[x - 256u]; }

// lengthsFromKeys: one invocation. keys[0..n) holds the present symbols as count << 8 | symbol, ascending (n ≥ 1);
// it writes their lengths into lens (absent symbols must be 0 already), sLo and sHi, and returns the longest:
// Huffman's algorithm by two queues, a leaf winning ties against an internal node.
uint lengthsFromKeys(uint n) {
    if (n <= 1u) {
        uint s = keys[0] & 255u;
        lens[s] = 1u;
        sLo = s;
        sHi = s;
        return 1u;
    }
    uint leaf = 0u, head = 0u;
    for (uint k = 0u; k + 1u < n; k++) {
        uint a, b;
        if (leaf < n && (head >= k || (keys[leaf] >> 8) <= wq[head])) { a = leaf; leaf++; } else { a = 256u + head; head++; }
        if (leaf < n && (head >= k || (keys[leaf] >> 8) <= wq[head])) { b = leaf; leaf++; } else { b = 256u + head; head++; }
        wq[k] = hweight(a) + hweight(b);
        if (a < 256u) parL[a] = k; else parI[a - 256u] = k;
        if (b < 256u) parL[b] = k; else parI[b - 256u] = k;
    }
    dep[n - 2u] = 0u;
    for (uint k = n - 2u; k > 0u; k--) dep[k - 1u] = dep[parI[k - 1u]] + 1u;
    uint longest = 0u, lo = 255u, hi = 0u;
    for (uint i = 0u; i < n; i++) {
        uint s = keys[i] & 255u;
        uint l = dep[parL[i]] + 1u;
        lens[s] = l;
        longest = max(longest, l);
        lo = min(lo, s);
        hi = max(hi, s);
    }
    sLo = lo;
    sHi = hi;
    return longest;
}

shared uint sN, sLong;

// buildLengthsWG: the whole workgroup, in uniform control flow. cnt holds the histogram of a chunk's exponents (at
// least one non-zero); it writes lens, sLo and sHi: the code of §14.3, counts halved (never below 1) while a code is
// longer than 11 bits. The present symbols are gathered and ranked by (count, symbol) in parallel (keys are
// distinct); one invocation merges. (The loop ends through its condition: an early return from a loop of a function
// called inside a kernel's chunk loop, or one invocation building while the others wait at a barrier, ended the
// chunk loop on lavapipe after a few chunks.)
void buildLengthsWG() {
    uint t = gl_LocalInvocationID.x;
    for (bool done = false; !done;) {
        if (t == 0u) sN = 0u;
        barrier();
        for (uint s = t; s < 256u; s += WG) {
            lens[s] = 0u;
            if (cnt[s] != 0u) dep[atomicAdd(sN, 1u)] = (cnt[s] << 8) | s;
        }
        barrier();
        uint n = sN;
        for (uint x = t; x < n; x += WG) {
            uint key = dep[x], r = 0u;
            for (uint y = 0u; y < n; y++) r += dep[y] < key ? 1u : 0u;
            keys[r] = key;
        }
        barrier();
        if (t == 0u) sLong = lengthsFromKeys(n);
        barrier();
        done = sLong <= HUFF_MAX_LEN;
        if (!done) {
            for (uint s = t; s < 256u; s += WG) {
                if (cnt[s] != 0u) cnt[s] = max(1u, cnt[s] >> 1);
            }
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

// Strided CRC-32C (the chunk checksums of docs/FORMAT.md §14.5), for kernels that define HUFF_CRC_STRIDE: STRIDE
// invocations take the words q ≡ i (mod STRIDE) of a message of T words; each runs Horner with a multiplication by
// x^(32·STRIDE) per word (crcT: four byte tables), multiplies its register by x^(32·(T − q_last)) (kp) at the end,
// and the terms XOR to the CRC. Loads are coalesced and independent of the register chain; the initial register
// (all ones) is folded into the first word, the final XOR is the caller's.
#ifdef HUFF_CRC_STRIDE
// x^(8·2^k) mod the CRC-32C polynomial, bit 31 = x^0 (so x^32 is the polynomial itself).
const uint XP[16] = uint[16](0x00800000u, 0x00008000u, 0x82F63B78u, 0x6EA2D55Cu, 0x18B8EA18u, 0x510AC59Au,
    0xB82BE955u, 0xB8FDB1E7u, 0x88E56F72u, 0x74C360A4u, 0xE4172B16u, 0x0D65762Au, 0x35D73A62u, 0x28461564u,
    0xBF455269u, 0xE2EA32DCu);

shared uint crcT[1024];
shared uint kp[HUFF_CRC_STRIDE + 1u]; // kp[d] = x^(32·d)

// xpow8 is x^(8·d) for d < 2^16.
uint xpow8(uint d) {
    uint p = 0x80000000u;
    for (uint k = 0u; k < 16u; k++) {
        if (((d >> k) & 1u) != 0u) p = mulmod(p, XP[k]);
    }
    return p;
}

// initStrideCRC fills crcT and kp (uniform control flow; a barrier must follow before use). The single-bit entries
// are the images of the 32 register bits; every other entry is the XOR of its bits' images.
void initStrideCRC() {
    uint t = gl_LocalInvocationID.x;
    uint xs = xpow8(4u * HUFF_CRC_STRIDE);
    for (uint b = t; b < 32u; b += WG) crcT[256u * (b / 8u) + (1u << (b % 8u))] = mulmod(1u << b, xs);
    for (uint d = t; d <= HUFF_CRC_STRIDE; d += WG) kp[d] = xpow8(4u * d);
    barrier();
    for (uint e = t; e < 1024u; e += WG) {
        uint j = e / 256u, b = e % 256u;
        if (b != 0u && (b & (b - 1u)) == 0u) continue;
        uint r = 0u;
        for (uint u = 0u; u < 8u; u++) {
            if (((b >> u) & 1u) != 0u) r ^= crcT[256u * j + (1u << u)];
        }
        crcT[e] = r;
    }
}

// shiftT multiplies r by x^(32·STRIDE).
uint shiftT(uint r) {
    return crcT[r & 255u] ^ crcT[256u + ((r >> 8) & 255u)] ^ crcT[512u + ((r >> 16) & 255u)] ^ crcT[768u + (r >> 24)];
}

// strideTerm is invocation i's term of a T-word message from its Horner register u (0 when it took no word).
uint strideTerm(uint u, uint i, uint T) {
    return i < T ? mulmod(u, kp[T - (i + (T - 1u - i) / HUFF_CRC_STRIDE * HUFF_CRC_STRIDE)]) : 0u;
}
#endif
