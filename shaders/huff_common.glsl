// Shared by the huff kernels (docs/FORMAT.md §14): the chunk size, the code construction of §14.3 (a workgroup
// builds a chunk's code in shared memory, exactly as codec/huff.go does), and CRC-32C helpers.
// Needs before inclusion: the kernel's declarations (contracts.glsl: WG, SHIFT; with HUFF_CRC_STRIDE, CRC_BITS
// and consts[]).

const uint N = 1u << SHIFT;
const uint LANES = HUFF_LANES;
const uint PMAX = N / LANES; // positions of a full chunk's lanes

// The code construction's arrays (A_cnt(i) … A_dep(i)): its own, or the first 7 × 256 words of an includer's 1-D
// shared array HUFF_ARENA of HUFF_ARENA_WORDS ≥ 1792 words (huff_decode lends its decode tables and rings, idle
// while it checks raw chunks).
#ifdef HUFF_ARENA
shared uint HUFF_ARENA[HUFF_ARENA_WORDS];
#define A_cnt(i) HUFF_ARENA[(i)]
#define A_lens(i) HUFF_ARENA[256u + (i)]
#define A_keys(i) HUFF_ARENA[512u + (i)]
#define A_wq(i) HUFF_ARENA[768u + (i)]
#define A_parL(i) HUFF_ARENA[1024u + (i)]
#define A_parI(i) HUFF_ARENA[1280u + (i)]
#define A_dep(i) HUFF_ARENA[1536u + (i)]
#else
shared uint cnt[256];  // histogram (the length limiter halves it in place)
shared uint lens[256]; // code lengths, 0 for absent symbols
shared uint keys[256]; // present symbols as count << 8 | symbol, ascending
shared uint wq[256];   // internal node weights, in creation order
shared uint parL[256]; // parent (internal node) of leaf i
shared uint parI[256]; // parent of internal node k
shared uint dep[256];  // depth of internal node k
#define A_cnt(i) cnt[i]
#define A_lens(i) lens[i]
#define A_keys(i) keys[i]
#define A_wq(i) wq[i]
#define A_parL(i) parL[i]
#define A_parI(i) parI[i]
#define A_dep(i) dep[i]
#endif
shared uint rc[256];   // bit-reversed code | length << 16
shared uint sLo, sHi;

// mergeQueues: one invocation. keys[0..n) holds the present symbols as count << 8 | symbol, ascending (n ≥ 2); it
// runs Huffman's algorithm by two queues (a leaf wins ties against an internal node), writing the internal nodes as
// weight << 8 | height (wq) and every node's parent (parL for leaves, parI for internal nodes; node n−2 is the
// root), and returns the root's height: the longest code, known without walking the tree. The fronts of both
// queues and the two leaves after the front are kept in registers, so no pick waits for shared memory.
uint mergeQueues(uint n) {
    uint leaf = 0u, head = 0u;
    uint kf = A_keys(0) >> 8, kn = A_keys(1) >> 8; // leaf weights at leaf, leaf+1, leaf+2
    uint kn2 = n > 2u ? A_keys(2) >> 8 : 0u;
    uint qf = 0u, qn = 0u;                         // internal nodes at head, head+1 (where they exist)
    uint node = 0u;
    for (uint k = 0u; k + 1u < n; k++) {
        uint w = 0u, h = 0u;
        for (uint pick = 0u; pick < 2u; pick++) {
            if (leaf < n && (head >= k || kf <= (qf >> 8))) {
                w += kf;
                A_parL(leaf) = k;
                leaf++;
                kf = kn;
                kn = kn2;
                kn2 = leaf + 2u < n ? A_keys(leaf + 2u) >> 8 : 0u;
            } else {
                w += qf >> 8;
                h = max(h, qf & 255u);
                A_parI(head) = k;
                head++;
                qf = qn;
                qn = head + 1u < k ? A_wq(head + 1u) : 0u;
            }
        }
        node = (w << 8) | (h + 1u); // weights ≤ 2^16: 24 bits
        A_wq(k) = node;
        if (head == k) qf = node; // the internal queue was empty: its front is the new node
        else if (head + 1u == k) qn = node;
    }
    return node & 255u;
}

shared uint sN, sLong;

#ifdef HUFF_PROBE
// Halving rounds found at once (the encoder defines HUFF_PROBE(i), 2·HUFF_PROBES·HUFF_PROBE_N words of shared memory
// it does not need while a code is built). Round r of §14.3's loop builds the code of the counts max(1, c >> r), so
// the trees of rounds 0 .. HUFF_PROBES−1 are independent: they are merged at once, one merge per subgroup, and the
// code is the tree of the first round whose height is at most 11, taken as it stands: each merge notes every
// node's parent in the node's word, so the depths and lengths come from it without merging that round again. KV
// chunks take three to five rounds, each a serial merge between barriers.
const uint HUFF_PROBES = 8u, HUFF_PROBE_N = 64u;
shared uint probeH[HUFF_PROBES];
// A round's words: leaf i (ascending) = weight | symbol << 17 | parent << 25, internal node k = weight << 8 |
// height | parent << 25 (weights are at most 2^16, nodes fewer than 64; the root has no parent).
const uint PW = 0x1FFFFu;

// mergeHeight: one invocation; the n ≥ 2 ascending leaves at HUFF_PROBE(b ..), internal nodes after them, both
// queues as in mergeQueues; writes the parents and returns the root's height.
uint mergeHeight(uint b, uint n) {
    uint leaf = 0u, head = 0u, node = 0u;
    uint q = b + n; // internal node k at q + k
    for (uint k = 0u; k + 1u < n; k++) {
        uint w = 0u, h = 0u;
        for (uint pick = 0u; pick < 2u; pick++) {
            uint kf = leaf < n ? HUFF_PROBE(b + leaf) : 0u;
            uint qf = head < k ? HUFF_PROBE(q + head) : 0u;
            if (leaf < n && (head >= k || (kf & PW) <= ((qf >> 8) & PW))) {
                w += kf & PW;
                HUFF_PROBE(b + leaf) = kf | (k << 25);
                leaf++;
            } else {
                w += (qf >> 8) & PW;
                h = max(h, qf & 255u);
                HUFF_PROBE(q + head) = qf | (k << 25);
                head++;
            }
        }
        node = (w << 8) | (h + 1u);
        HUFF_PROBE(q + k) = node;
    }
    return node & 255u;
}

// probeRounds: the whole workgroup, in uniform control flow, instead of or before buildLengthsWG. With 2 to
// HUFF_PROBE_N symbols and a round among the first HUFF_PROBES whose code fits, it writes lens, sLo and sHi (the code
// of §14.3) and returns true; otherwise it halves cnt as many times as the probed rounds would (all of them when none
// fits; nothing for other symbol counts) and returns false, and buildLengthsWG goes on from there. It ends after a
// barrier (and has no early return: see buildLengthsWG).
bool probeRounds() {
    uint t = gl_LocalInvocationID.x;
    if (t == 0u) sN = 0u;
    barrier();
    for (uint s = t; s < 256u; s += WG) {
        if (A_cnt(s) != 0u) A_dep(atomicAdd(sN, 1u)) = (A_cnt(s) << 8) | s;
    }
    barrier();
    uint n = sN;
    bool built = false;
    if (n >= 2u && n <= HUFF_PROBE_N) { // uniform; a single symbol takes one round anyway
    // Round r's leaves, ranked by (count, symbol) as the merge takes them.
    for (uint j = t; j < HUFF_PROBES * n; j += WG) {
        uint r = j / n, x = j % n;
        // (count, symbol) compared as one key: counts are at most 2^16. Four keys per step, so that four reads
        // are in flight.
        uint kx = A_dep(x), cx = max(1u, (kx >> 8) >> r), rx = (cx << 8) | (kx & 255u), rank = 0u, y = 0u;
        for (; y + 4u <= n; y += 4u) {
            uvec4 ky = uvec4(A_dep(y), A_dep(y + 1u), A_dep(y + 2u), A_dep(y + 3u));
            uvec4 ry = (max(uvec4(1u), (ky >> 8) >> r) << 8) | (ky & 255u);
            rank += uint(ry.x < rx) + uint(ry.y < rx) + uint(ry.z < rx) + uint(ry.w < rx);
        }
        for (; y < n; y++) {
            uint ky = A_dep(y);
            rank += uint(((max(1u, (ky >> 8) >> r) << 8) | (ky & 255u)) < rx);
        }
        HUFF_PROBE(2u * HUFF_PROBE_N * r + rank) = cx | ((kx & 255u) << 17);
    }
    barrier();
    // One merge per subgroup-sized slice of the workgroup, so the serial merges run side by side.
    uint per = max(WG / HUFF_PROBES, 1u);
    for (uint r = t / per; t % per == 0u && r < HUFF_PROBES; r += WG / per) {
        probeH[r] = mergeHeight(2u * HUFF_PROBE_N * r, n);
    }
    barrier();
    uint first = HUFF_PROBES;
    for (uint r = HUFF_PROBES; r > 0u; r--) {
        if (probeH[r - 1u] <= HUFF_MAX_LEN) first = r - 1u;
    }
    if (first < HUFF_PROBES) { // uniform
        // The code is round first's tree: each internal node's depth is its hops to the root (node n − 2), a
        // leaf's length its parent's depth + 1.
        uint b = 2u * HUFF_PROBE_N * first, q = b + n;
        for (uint k = t; k + 1u < n; k += WG) {
            uint d = 0u;
            for (uint x = k; x + 2u < n; x = HUFF_PROBE(q + x) >> 25) d++;
            A_dep(k) = d;
        }
        barrier();
        // Each invocation's leaves (n ≤ 64, WG ≥ 32: at most two) into registers: lens may share the rounds' words.
        uint s0 = 256u, l0 = 0u, s1 = 256u, l1 = 0u;
        if (t < n) {
            uint lw = HUFF_PROBE(b + t);
            s0 = (lw >> 17) & 255u;
            l0 = A_dep(lw >> 25) + 1u;
        }
        if (t + WG < n) {
            uint lw = HUFF_PROBE(b + t + WG);
            s1 = (lw >> 17) & 255u;
            l1 = A_dep(lw >> 25) + 1u;
        }
        barrier();
        for (uint s = t; s < 256u; s += WG) A_lens(s) = 0u;
        if (t == 0u) {
            sLo = 255u;
            sHi = 0u;
        }
        barrier();
        if (s0 < 256u) {
            A_lens(s0) = l0;
            atomicMin(sLo, s0);
            atomicMax(sHi, s0);
        }
        if (s1 < 256u) {
            A_lens(s1) = l1;
            atomicMin(sLo, s1);
            atomicMax(sHi, s1);
        }
        built = true;
    } else {
        for (uint s = t; s < 256u; s += WG) {
            if (A_cnt(s) != 0u) A_cnt(s) = max(1u, A_cnt(s) >> first);
        }
    }
    }
    barrier();
    return built;
}
#endif

// buildLengthsWG: the whole workgroup, in uniform control flow. cnt holds the histogram of a chunk's exponents (at
// least one non-zero); it writes lens, sLo and sHi: the code of §14.3, counts halved (never below 1) while a code is
// longer than 11 bits. The present symbols are gathered and ranked by (count, symbol) in parallel (keys are
// distinct); one invocation merges the queues, which gives the longest code; only a code that needs no more halving
// has its depths and lengths taken (in parallel): KV chunks take three to five rounds. It ends after a barrier.
// (The loop ends through its condition: an early return from a loop of a function called inside a kernel's chunk
// loop, or one invocation building while the others wait at a barrier, ended the chunk loop on lavapipe after a few
// chunks.)
void buildLengthsWG() {
    uint t = gl_LocalInvocationID.x;
    for (bool done = false; !done;) {
        if (t == 0u) sN = 0u;
        barrier();
        for (uint s = t; s < 256u; s += WG) {
            A_lens(s) = 0u;
            if (A_cnt(s) != 0u) A_dep(atomicAdd(sN, 1u)) = (A_cnt(s) << 8) | s;
        }
        barrier();
        uint n = sN;
        for (uint x = t; x < n; x += WG) {
            uint key = A_dep(x), r = 0u;
            uint y = 0u;
            for (; y + 4u <= n; y += 4u) { // four reads in flight
                r += uint(A_dep(y) < key) + uint(A_dep(y + 1u) < key) + uint(A_dep(y + 2u) < key)
                    + uint(A_dep(y + 3u) < key);
            }
            for (; y < n; y++) r += uint(A_dep(y) < key);
            A_keys(r) = key;
        }
        barrier();
        if (t == 0u) {
            sLong = n > 1u ? mergeQueues(n) : 1u;
            sLo = 255u;
            sHi = 0u;
        }
        barrier();
        if (sLong <= HUFF_MAX_LEN) { // uniform: read by all after the barrier
            // Depth of each internal node: its hops to the root, all nodes at once.
            for (uint k = t; k + 1u < n; k += WG) {
                uint d = 0u;
                for (uint x = k; x + 2u < n; x = A_parI(x)) d++;
                A_dep(k) = d;
            }
            barrier();
            for (uint x = t; x < n; x += WG) {
                uint sym = A_keys(x) & 255u;
                A_lens(sym) = n > 1u ? A_dep(A_parL(x)) + 1u : 1u;
                atomicMin(sLo, sym);
                atomicMax(sHi, sym);
            }
        }
        barrier();
        done = sLong <= HUFF_MAX_LEN;
        if (!done) {
            for (uint s = t; s < 256u; s += WG) {
                if (A_cnt(s) != 0u) A_cnt(s) = max(1u, A_cnt(s) >> 1);
            }
        }
    }
}

// canonicalWG: the whole workgroup, in uniform control flow (a barrier must follow before rc is read). Canonical
// codes from lens over [sLo, sHi] (RFC 1951 §3.2.2), bit-reversed into rc: the first code of length l from the
// per-length counts, plus the symbol's rank among the symbols of its length (smaller symbols first). One invocation
// per symbol: a serial pass over up to 256 symbols cost more than the rest of the code construction.
shared uint cBl[HUFF_MAX_LEN + 1u];
void canonicalWG() {
    uint t = gl_LocalInvocationID.x;
    for (uint l = t; l <= HUFF_MAX_LEN; l += WG) cBl[l] = 0u;
    barrier();
    uint lo = sLo, hi = sHi;
    for (uint s = lo + t; s <= hi; s += WG) {
        uint l = min(A_lens(s), HUFF_MAX_LEN);
        if (l != 0u) atomicAdd(cBl[l], 1u);
    }
    barrier();
    for (uint s = lo + t; s <= hi; s += WG) {
        uint l = min(A_lens(s), HUFF_MAX_LEN);
        rc[s] = 0u;
        if (l == 0u) continue;
        uint code = 0u;
        for (uint k = 1u; k <= l; k++) code = (code + (k > 1u ? cBl[k - 1u] : 0u)) << 1;
        for (uint r = lo; r < s; r++) code += A_lens(r) == l ? 1u : 0u;
        rc[s] = (bitfieldReverse(code) >> (32u - l)) | (l << 16);
    }
}

// tableBytes is the code table's size for symbols lo..hi.
uint tableBytes(uint lo, uint hi) { return ((2u + (hi - lo + 2u) / 2u) + 3u) & ~3u; }

// laneValues is the number of values of lane l in a chunk of m values.
uint laneValues(uint m, uint l) { return l >= m ? 0u : (m - l + LANES - 1u) / LANES; }

// Strided CRC-32C (the chunk checksums of docs/FORMAT.md §14.5), for kernels that define HUFF_CRC_STRIDE and bind
// consts[], codec/vkcodec's CRCConsts for workgroups of STRIDE, built once on the host (its slot 1, words 1024..,
// is the table of x^(32·STRIDE); at CONSTS_KC + t is x^(32(STRIDE − t)); at CONSTS_XPOW + k, x^(8·2^k)). STRIDE
// invocations take the words q ≡ i (mod STRIDE) of a message of T words; each runs Horner with a multiplication by
// x^(32·STRIDE) per word (crcT: the XOR of one lookup per CRC_BITS-bit field of the register, the last field
// narrower), multiplies its register by x^(32·(T − q_last)) (kp) at the end, and the terms XOR to the CRC. Loads
// are coalesced and independent of the register chain; the initial register (all ones) is folded into the first
// word, the final XOR is the caller's. Four byte tables are the fastest on an H200: 32-entry tables lie in distinct
// banks and never conflict, but their 7 lookups cost more than 4 conflicting ones (bench/RESULTS.md).
#ifdef HUFF_CRC_STRIDE
#include "crc_fields.glsl"
const uint CONSTS_KC = 5u * 1024u, CONSTS_XPOW = 5u * 1024u + 2u * HUFF_CRC_STRIDE;

shared uint crcT[CRC_TAB];
shared uint kp[HUFF_CRC_STRIDE + 1u]; // kp[d] = x^(32·d)

// initStrideCRC loads crcT and kp from consts (uniform control flow; a barrier must follow before use).
void initStrideCRC() {
    uint t = gl_LocalInvocationID.x;
    for (uint e = t; e < CRC_TAB; e += WG) crcT[e] = consts[1024u + e];
    for (uint d = t; d <= HUFF_CRC_STRIDE; d += WG) kp[d] = d == 0u ? 0x80000000u : consts[CONSTS_KC + HUFF_CRC_STRIDE - d];
}

// shiftT multiplies r by x^(32·STRIDE).
uint shiftT(uint r) {
    uint x;
    CRC_LOOKUP(x, crcT, 0u, 1u, r);
    return x;
}

// strideTerm is invocation i's term of a T-word message from its Horner register u (0 when it took no word).
uint strideTerm(uint u, uint i, uint T) {
    return i < T ? mulmod(u, kp[T - (i + (T - 1u - i) / HUFF_CRC_STRIDE * HUFF_CRC_STRIDE)]) : 0u;
}
#endif
