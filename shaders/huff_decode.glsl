// huff decode (docs/FORMAT.md §14), one pass. A workgroup holds K = WG/32 chunks at a time (grid-stride over groups
// of K chunks), a team of 32 invocations per chunk. Per chunk, in parallel over the team: the table entry against its
// neighbour's and the piece header (lengths parsed 8 nibbles per word, Kraft sum from per-length counts), the
// canonical order of the symbols (rank among equal lengths by nibble popcounts) and the two-level decode tables (see
// dtab below). Then the chunk's values go in blocks of 16 positions (512 values): invocation l decodes lane l's 16
// codes into the staging buffer, reading the lane's words from a 16-word ring in shared memory that it refills
// itself, loading two words at each block's start for later blocks (see the ring's comment: the decode chain must
// never wait for global memory). After a barrier, invocation t combines values 16t..16t+15 of the block with their
// low bytes (16-byte loads, issued LOWPF blocks ahead) into two 16-byte stores. The chunks in flight per SM are what
// bounds the decoder (its chains wait on each other's latency): registers and shared memory decide them (NVIDIA's
// driver keeps about 100 KiB per SM), so a chunk keeps only its decode tables (2 KiB), ring (2.1 KiB, the header's
// arrays until the ring is filled) and one block's exponents (576 bytes), the first two in an arena that the raw
// chunks' code construction borrows, and the block loop is one block long.
// The chunk checksums are huff_check.comp's, a kernel of its own that the host records beside this one (it has
// many more words in flight per SM than the decode chains leave room for); a stream error of a chunk whose checksum
// fails is reported too, and the status's precedence (checksum before stream errors) decides, as in the reference.
// Status: flags, the lowest structurally corrupt chunk, the lowest chunk with a CRC mismatch (huff_check), and the
// lowest chunk with a stream error, as chunk<<1 | (0 corrupt lane stream, 1 non-canonical). Every index derived
// from payload data is bounded before use.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#if HUFF_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if HUFF_INT16
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif

#include "layout.glsl"
#include "common.glsl"
#define HUFF_ARENA dtab
// The kernel's declarations come from its contract (shaders/contracts.go, generated into contracts.glsl).
// Its specialization constants:
// TEAM_SYNC 1: every team is one subgroup (the host sets it for devices whose subgroups are exactly 32 invocations,
// required full), so the barriers that order a team's own shared memory (its tables, rings and staging: all but
// the chunk loop's start and the raw chunks' check) sync the subgroup only, and the chunks of a workgroup do not wait
// for each other at every block. 0: workgroup barriers throughout, teams by invocation index.
// L1MIN: the fewest first-level index bits a chunk's decode tables take (see dtab); 9 gives every chunk the widest.
// ONE_READ 1: a code takes one table read, its level chosen by x < B; 0: both levels read and the first chooses.
// The decode chains are bound by instructions per code, not by the reads' latency: one read, a clamp and a select
// fewer per code took the H200 from 700 to 766 GB/s, while a uniform branch (subgroupAny) around the second read
// cost a third, and tables of several codes per entry (fewer reads per code, more instructions) a sixth.
// RFILL: the words each lane loads into its ring per block (1–4; see the ring).
// LOWPF: how many blocks ahead the low words are loaded (1–3).
// TABN: the 16-bit entries of a chunk's decode tables (dtab): 1024, 512 or 256. Smaller tables leave room in shared
// memory for more chunks per SM; chunks whose tables do not fit (at 256: codes longer than 6 bits over more than 192
// of the 2048 values of x, where KV chunks have 20–40) are decoded through their canonical ranges (WIDE), slower.
#include "contracts.glsl"
// Per chunk in flight its two table rows and its lanes' rings (CHW words), at least the 7 rows of the code
// construction, which borrows them once the workgroup's chunks are decoded.
#if HUFF_INT16
#define TROW 0u   // the decode tables are 16-bit entries of their own array (tab16)
#else
#define TROW (TABN / 2u) // the decode tables, 16-bit entries in pairs
#endif
#define CHW (TROW + 32u * 17u)
#define HUFF_ARENA_WORDS ((WG / 32u) * CHW > 1792u ? (WG / 32u) * CHW : 1792u)
#include "huff_common.glsl"

const uint TEAM = LANES;     // invocations per chunk, one lane each
const uint K = WG / TEAM;    // chunks per workgroup
const uint LONG = 0xFF00u;   // first-level entry of an index whose code is longer than W bits (dtab)
const uint BP = 16u;         // positions per block: 512 values, 16 per invocation
const uint NBLK = PMAX / BP; // blocks of a full chunk (even: PMAX ≥ 128)
// A WIDE chunk's table row (dtab): a first level of WWIDE bits, then symbols, CSTART and OFF per length.
const uint WWIDE = TABN >= 512u ? 8u : 6u;
const uint WSYM = 1u << WWIDE, WCST = WSYM + 128u, WOFF = WCST + 16u;

// teamBarrier orders a team's own shared memory: a subgroup barrier with TEAM_SYNC, else the workgroup's.
void teamBarrier() {
    if (TEAM_SYNC != 0u) {
        // Shared memory only: subgroupBarrier() also orders buffer memory, which may wait for the loads in flight.
        controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease);
    } else {
        barrier();
    }
}

// dtab (declared by huff_common.glsl) is an arena: chunk k's decode tables in its row of TABN / 2 words (with 16-bit
// integers, in tab16 below), then the rings of all chunks' lanes. The decode tables are TABN 16-bit entries
// (symbol | length << 8) in two levels. With x the next 11 lane bits read first bit highest, each code
// covers one contiguous range of x, shorter codes first. The first level, entries 0 .. 2^W − 1, holds the codes
// of at most W bits, indexed by the next W lane bits as they come (first bit lowest: no reversal on the chain),
// and LONG where a longer code starts; the second, from entry 2^W, holds the longer codes at x − B (B: the first x
// of a code longer than W bits). Each chunk takes the least W ≥ L1MIN whose second level fits the row (with 1024
// entries W = 9 always fits: at most 510 entries of 10- and 11-bit codes, Kraft with 256 symbols). A chunk whose
// tables fit no W ≤ log2(TABN) is WIDE: a first level of WWIDE bits, then its symbols in canonical order (two per
// entry, from WSYM) and per code length l its CSTART (entry WCST + l) and OFF (WOFF + l: CRANK(l) minus CSTART(l)'s
// first l bits, 16-bit two's complement), from which lookupWide finds the longer codes. Why small W: 32 lanes read
// their entries at once, and entries in different words of one bank are read one after another. A first level
// of 2^6 entries is 32 words, one per bank, so its reads never conflict; at W = 9 (256 words) a read of KV data
// took 3.2–3.5 passes on average, and the second level of KV chunks at W = 6 is 20–40 entries, also one word per
// bank (a simulation of the lanes' reads on kvlike, gauss and the KV test file).
// TAB2 writes entries 2w and 2w+1 of a chunk's table, ENT reads entry e (TR: the table's first entry with 16-bit
// integers, its first word without).
#if HUFF_INT16
// With 16-bit integers the tables are an array of their own, 16-bit entries (no shifts on the decode chain).
shared uint16_t tab16[K * TABN];
#define TAB2(w, a, b) { tab16[TR + 2u * (w)] = uint16_t(a); tab16[TR + 2u * (w) + 1u] = uint16_t(b); }
#define ENT(e) uint(tab16[TR + (e)])
#else
#define TAB2(w, a, b) dtab[TR + (w)] = (a) | ((b) << 16)
#define ENT(e) ((dtab[TR + ((e) >> 1)] >> (((e) & 1u) << 4)) & 0xFFFFu)
#endif
// Per code length l (1 .. 12) in the chunk's ring area while its tables are built: the first x of its codes
// (CSTART, CSTART(12) the end of the code) and the canonical rank of its first symbol (CRANK).
#define CSTART(l) dtab[RA + (l)]
#define CRANK(l) dtab[RA + 16u + (l)]
#define RING(j) dtab[RB + (j)]
// Staging: the block's 512 exponents, 4 per word, a row of 36 words per group of 4 positions: lane l's word of
// positions 4g .. 4g+3 at word 36g + l (the decode chain stores one word per 4 codes). The combine step's reads
// (16 consecutive words per invocation) are 16-byte loads without bank conflicts: 36 spreads the rows over the banks.
shared uvec4 stg[K * 36u];
const uint RS = 17u;            // ring stride per lane (16 words + 1: lanes' slots spread over the banks)
// ring (in the arena, RING): per lane its words k at slot k % 16, the window the decode chain reads
// Until the chunk's decode tables are built, its ring area (RA) holds the header's arrays: CSTART and CRANK
// (words 0 .. 31), from word 256 the present symbols in canonical order (64 words, 4 per word), from 320 the
// code lengths (32: symbol minSym + 8w + u in nibble u of word w), from 352 the lane word counts (32), from 384 the
// symbols per code length (12): no shared memory of their own, which with registers bounds the chunks an SM holds.
shared uint tFlag[K];           // 1: a length above 11 (corrupt); 2: non-zero table padding (non-canonical)
shared uint tB[K], tW[K];      // the chunk's decode tables: B and W (dtab)
shared uint tBad[K];            // 1: lane stream corrupt, 2: non-canonical
shared uint tRaw[K], tOff[K], tM[K]; // raw chunks awaiting the choice check
shared uint sAnyRaw;
shared uint rawLW[LANES];

uint pieceWord(uint i) {
    uint w = pc.pieceLen / 4u;
    return w == 0u ? 0u : pieces[pc.pieceBase + min(i, w - 1u)];
}

uint pieceByte(uint b) { return (pieceWord(b / 4u) >> (8u * (b % 4u))) & 255u; }

uint lowWord(uint i) { return pc.lowWords == 0u ? 0u : lows[pc.lowBase + min(i, pc.lowWords - 1u)]; }

// lowQuad: low words i .. i+3 (i a multiple of 4), with one 16-byte load where the binding allows it.
uvec4 lowQuad(uint i) {
    if ((pc.lowBase & 3u) == 0u && i + 3u < pc.lowWords) return lowsv[(pc.lowBase + i) / 4u];
    return uvec4(lowWord(i), lowWord(i + 1u), lowWord(i + 2u), lowWord(i + 3u));
}

uint tableWord(uint i) { return table[pc.tableBase + i]; }

// laneQuad: words k .. k+3 of a lane of nw words starting at piece word at (0 past its end).
uvec4 laneQuad(uint at, uint k, uint nw) {
    return uvec4(k < nw ? pieceWord(at + k) : 0u, k + 1u < nw ? pieceWord(at + k + 1u) : 0u,
                 k + 2u < nw ? pieceWord(at + k + 2u) : 0u, k + 3u < nw ? pieceWord(at + k + 3u) : 0u);
}

uvec4 bytes4(uint w) { return uvec4(w & 255u, (w >> 8) & 255u, (w >> 16) & 255u, w >> 24); }

// countEq is the number of nibbles of w equal to l (1 ≤ l ≤ 15).
uint countEq(uint w, uint l) {
    uint x = w ^ (l * 0x11111111u);
    return 8u - uint(bitCount((x | (x >> 1) | (x >> 2) | (x >> 3)) & 0x11111111u));
}

uint nibble(uint base, uint i) { return (dtab[base + i / 8u] >> (4u * (i % 8u))) & 15u; }

// window is the lane's next 32 bits (first bit lowest) from its window c0, c1 at bit sh of c0 (decodeStep).
uint window(uint c0, uint c1, uint sh) {
#if HUFF_INT64
    return uint(packUint2x32(uvec2(c0, c1)) >> sh); // a funnel shift: 5 % faster on the H200
#else
    return (c0 >> sh) | ((c1 << 1) << (31u - sh));
#endif
}

// lookup is the decode tables' entry (symbol | length << 8) of the code that starts the lane bits `bits` (first bit
// lowest), x being their first 11 bits read first bit highest; M = 2^W − 1 and CAP = TABN − 1 − 2^W (dtab). Without
// clamp, x − B must lie in the second level (a complete code).
uint lookup(uint bits, uint x, uint B, uint TR, uint M, uint CAP, bool clamp) {
    if (ONE_READ != 0u) {
        // x < B exactly where the first level holds the code: one read, its index chosen by a compare.
        uint y = clamp ? min(x - B, CAP) : x - B;
        return ENT(x < B ? (bits & M) : M + 1u + y);
    }
    // Both levels are read at once (the second's index clamps to the row's last entry below B, one word that the
    // short codes' lanes share): a branch for the rare long codes made the whole subgroup wait whenever one lane
    // had one.
    uint f = ENT(bits & M), g = ENT(M + 1u + min(x - B, CAP));
    return f == LONG ? g : f;
}

// lookupWide is lookup's entry for a WIDE chunk (dtab): a code of at most WWIDE bits from the first level, a longer
// one from the canonical ranges: its length the longest l with CSTART(l) ≤ x, its rank x's first l bits + OFF(l).
uint lookupWide(uint bits, uint x, uint B, uint TR) {
    uint f = ENT(bits & (WSYM - 1u));
    uint l = WWIDE + 1u;
    [[unroll]] for (uint j = WWIDE + 2u; j <= HUFF_MAX_LEN; j++) l += x >= ENT(WCST + j) ? 1u : 0u;
    uint k = min(uint(int(x >> (HUFF_MAX_LEN - l)) + (int(ENT(WOFF + l) << 16) >> 16)), 255u);
    uint d = ((ENT(WSYM + k / 2u) >> (8u * (k & 1u))) & 255u) | (l << 8);
    return x < B ? f : d;
}

// codeEntry is the entry of the code whose range holds x (0 when none does: a single-symbol code), from the
// chunk's CSTART, CRANK and canonical order (SB).
uint codeEntry(uint x, uint RA, uint SB) {
    for (uint l = 1u; l <= HUFF_MAX_LEN; l++) {
        if (x < CSTART(l + 1u)) {
            uint k = min(CRANK(l) + ((x - CSTART(l)) >> (HUFF_MAX_LEN - l)), 255u);
            return ((dtab[SB + k / 4u] >> (8u * (k % 4u))) & 255u) | (l << 8);
        }
    }
    return 0u;
}

// tableEntry is entry e of a chunk's decode tables with a first level of W bits, B and end (CSTART(12)) as above.
uint tableEntry(uint e, uint W, uint B, uint end, uint RA, uint SB, bool wide) {
    if (wide && e >= (1u << W)) {
        uint l = e - WOFF; // OFF(l), CSTART(l) for l ≤ 12
        if (e >= WOFF) return l <= HUFF_MAX_LEN ? (CRANK(l) - (CSTART(l) >> (HUFF_MAX_LEN - l))) & 0xFFFFu : 0u;
        if (e >= WCST) return e - WCST <= HUFF_MAX_LEN + 1u ? CSTART(e - WCST) : 0u;
        uint j = e - WSYM; // symbols 2j, 2j+1 (dtab[SB ..] holds four per word)
        if (e >= WSYM) return (dtab[SB + j / 2u] >> (16u * (j & 1u))) & 0xFFFFu;
        return 0u;
    }
    if (e < (1u << W)) {
        uint x = (bitfieldReverse(e) >> (32u - W)) << (HUFF_MAX_LEN - W);
        return x < B ? codeEntry(x, RA, SB) : (x < end ? LONG : 0u);
    }
    uint x = B + e - (1u << W);
    return x < end ? codeEntry(x, RA, SB) : 0u;
}

// advance moves a lane's window past sh ≤ 63 bits of c0 (at most one word) and reads the word after it from the
// ring (RB), ahead of its use.
void advance(inout uint c0, inout uint c1, inout uint nx, inout uint sh, inout uint k2, uint RB) {
    bool cr = sh >= 32u;
    c0 = cr ? c1 : c0;
    c1 = cr ? nx : c1;
    sh -= cr ? 32u : 0u;
    k2 += cr ? 1u : 0u;
    nx = RING(k2 & 15u);
}

// decodeStep decodes the next code of a lane: its symbol. The lane's window is c0, c1 (its words k2−2, k2−1, sh
// bits of c0 taken: the lane's bit position is 32·(k2−2) + sh) and nx (word k2, read from the lane's ring at RB a step
// before it can be needed: after a word is passed, the next 32 bits take at least two codes), so no step waits for a
// ring read. With check, bad gets 1 for a pattern that starts no code (only a single-symbol code has those).
// Registers and the table lookups only: the same steps in every lane.
uint decodeStep(inout uint c0, inout uint c1, inout uint nx, inout uint sh, inout uint k2, inout uint bad, uint B,
                uint TR, uint M, uint CAP, uint RB, bool check, bool wide) {
    uint bits = window(c0, c1, sh), x = bitfieldReverse(bits) >> 21, d;
    if (wide) d = lookupWide(bits, x, B, TR);
    else d = lookup(bits, x, B, TR, M, CAP, true);
    uint len = d >> 8;
    if (check && len == 0u) bad |= 1u;
    sh += len; // ≤ 31 + 11
    advance(c0, c1, nx, sh, k2, RB);
    return d & 255u;
}

// decodePair decodes the next two codes of a lane whose code is complete (no pattern starts no code): their
// symbols in bits 0..7 and 8..15. Two codes take at most 22 bits, all inside the window's 32 bits from sh, so the
// window moves once per pair (at most one word: sh ≤ 31 + 22) and reads the ring once.
uint decodePair(inout uint c0, inout uint c1, inout uint nx, inout uint sh, inout uint k2, uint B, uint TR,
                uint M, uint CAP, uint RB) {
    uint bits = window(c0, c1, sh), xr = bitfieldReverse(bits);
    uint d1 = lookup(bits, xr >> 21, B, TR, M, CAP, false);
    uint l1 = d1 >> 8;
    uint d2 = lookup(bits >> l1, (xr << l1) >> 21, B, TR, M, CAP, false);
    sh += l1 + (d2 >> 8);
    advance(c0, c1, nx, sh, k2, RB);
    return (d1 & 255u) | ((d2 & 255u) << 8);
}

void report(uint cls, uint v) {
    atomicOr(status[0], cls == 1u ? STATUS_CORRUPT : (cls == 2u ? STATUS_CHECKSUM : STATUS_NONCANONICAL));
    atomicMin(status[cls], v);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint team = TEAM_SYNC != 0u ? gl_SubgroupID : t / TEAM, i = TEAM_SYNC != 0u ? gl_SubgroupInvocationID : t % TEAM;
    uint TR = HUFF_INT16 != 0 ? team * TABN : team * (TABN / 2u), RA = K * TROW + team * LANES * RS;
    uint SB = RA + 256u, LB = RA + 320u, NB = RA + 352u, BB = RA + 384u;
    for (uint base = gl_WorkGroupID.x * K; base < pc.chunks; base += gl_NumWorkGroups.x * K) {
        uint c = base + team;
        bool act = c < pc.chunks;
        if (i == 0u) {
            tFlag[team] = 0u;
            tBad[team] = 0u;
            tRaw[team] = 0u;
        }
        for (uint w = i; w < 64u; w += TEAM) dtab[SB + w] = 0u;
        if (t == 0u) sAnyRaw = 0u;
        barrier();
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint v0 = c * N;
        uint info = 0u, off = 0u, stored = 0u, expect = 0u;
        if (act) {
            info = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_INFO);
            off = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF); // words
            stored = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_CRC);
            if (c > 0u) {
                uint pinfo = tableWord((c - 1u) * CHUNK_ENTRY_WORDS + ENTRY_INFO);
                expect = tableWord((c - 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF)
                    + ((pinfo >> KIND_SHIFT) == CHUNK_RAW ? N / 4u : (pinfo & HUFF_PIECE_MASK));
            }
        }
        uint kind = info >> KIND_SHIFT;
        bool raw = kind == CHUNK_RAW;
        uint rawSize = (m + 3u) & ~3u;
        uint size = raw ? rawSize : 4u * (info & HUFF_PIECE_MASK);
        uint words = pc.pieceLen / 4u;
        // Structure (§14.4): the entry, its offset against the running sum (the previous entry's offset and size:
        // when that entry is itself wrong, the lower chunk is reported anyway), the piece inside the section, the
        // piece header; the section's end after the last chunk (no chunk: status[4]).
        bool corrupt = kind > CHUNK_RAW || (raw && (info & HUFF_PIECE_MASK) != 0u) || off != expect
            || off > words || size / 4u > words - off;
        uint h = act && !corrupt && !raw ? pieceWord(off) : 0u;
        uint lo = h & 255u, hi = (h >> 8) & 255u;
        uint n = hi >= lo ? hi - lo + 1u : 0u;
        uint tb = tableBytes(lo, hi);
        bool hdr = act && !corrupt && !raw;
        if (hdr && (size < 4u + 4u * HUFF_COUNTS_WORDS || lo > hi || tb + 4u * HUFF_COUNTS_WORDS > size)) {
            corrupt = true;
            hdr = false;
        }
        if (hdr) {
            // Nibble word nq holds bytes 2+4nq .. 5+4nq of the piece; word 32 only covers the last padding bytes.
            for (uint nq = i; nq <= 32u; nq += TEAM) {
                uint b0 = 2u + 4u * nq;
                uint v = (pieceWord(off + nq) >> 16) | (pieceWord(off + nq + 1u) << 16);
                uint nv = n > 8u * nq ? min(n - 8u * nq, 8u) : 0u;
                uint vm = nv == 8u ? ~0u : (1u << (4u * nv)) - 1u;
                uint nb = tb > b0 ? min(tb - b0, 4u) : 0u;
                uint bm = nb == 4u ? ~0u : (1u << (8u * nb)) - 1u;
                uint lv = v & vm;
                if (nq < 32u) dtab[LB + nq] = lv;
                if (((lv & (lv << 1)) & 0x88888888u) != 0u) atomicOr(tFlag[team], 1u);
                if ((v & ~vm & bm) != 0u) atomicOr(tFlag[team], 2u);
            }
            if (i < LANES / 2u) {
                uint lw = pieceWord(off + tb / 4u + i);
                dtab[NB + 2u * i] = lw & 0xFFFFu;
                dtab[NB + 2u * i + 1u] = lw >> 16;
            }
        }
        teamBarrier();
        if (hdr && i < HUFF_MAX_LEN) {
            uint l = i + 1u, s = 0u;
            for (uint w = 0u; w < (n + 7u) / 8u; w++) s += countEq(dtab[LB + w], l);
            dtab[BB + l] = s;
        }
        teamBarrier();
        uint rel = 0u, nw = 0u; // the lane's first word within the piece, and its word count
        if (hdr) {
            uint kraft = 0u, used = 0u;
            for (uint l = 1u; l <= HUFF_MAX_LEN; l++) {
                kraft += dtab[BB + l] << (HUFF_MAX_LEN - l);
                used += dtab[BB + l];
            }
            uint f0 = nibble(LB, 0u), fn = nibble(LB, n - 1u);
            uint tot = 0u;
            for (uint l = 0u; l < LANES; l++) {
                uint x = dtab[NB + l];
                if (l < i) rel += x;
                tot += x;
            }
            nw = dtab[NB + i];
            rel += tb / 4u + HUFF_COUNTS_WORDS;
            if ((tFlag[team] & 1u) != 0u || f0 == 0u || fn == 0u || (used == 1u && f0 != 1u)
                || (used > 1u && kraft != (1u << HUFF_MAX_LEN)) || tb + 4u * HUFF_COUNTS_WORDS + 4u * tot != size) {
                corrupt = true;
            } else {
                // Canonical order: lengths ascending, then symbols; position = symbols of shorter lengths + rank.
                for (uint nq = i; nq < (n + 7u) / 8u; nq += TEAM) {
                    uint lw = dtab[LB + nq];
                    for (uint u = 0u; u < 8u; u++) {
                        uint l = (lw >> (4u * u)) & 15u;
                        if (l == 0u) continue;
                        uint pos = countEq(lw & ((1u << (4u * u)) - 1u), l);
                        for (uint w = 0u; w < nq; w++) pos += countEq(dtab[LB + w], l);
                        for (uint k = 1u; k < l; k++) pos += dtab[BB + k];
                        atomicOr(dtab[SB + pos / 4u], (lo + 8u * nq + u) << (8u * (pos % 4u)));
                    }
                }
            }
        }
        if (act && corrupt && i == 0u) report(1u, c);
        bool skip = !act || corrupt;
        if (!skip && last && off + size / 4u != words && i == 0u) {
            atomicOr(status[0], STATUS_CORRUPT);
            status[4] = 1u;
        }
        bool ncCRC = !skip && pc.checksums == 0u && stored != 0u;
        bool dec = !skip && !raw;
        // The lane's first 16 words, in flight while the decode table is built.
        uint RB = RA + i * RS;
        uvec4 r0 = dec ? laneQuad(off + rel, 0u, nw) : uvec4(0u), r1 = dec ? laneQuad(off + rel, 4u, nw) : uvec4(0u);
        uvec4 r2 = dec ? laneQuad(off + rel, 8u, nw) : uvec4(0u), r3 = dec ? laneQuad(off + rel, 12u, nw) : uvec4(0u);
        teamBarrier(); // the canonical order complete
        bool single = false; // a code of one symbol: lane patterns that start no code are possible
        bool wide = false;   // tables of the WIDE layout (dtab)
        if (!skip && !raw && i < HUFF_MAX_LEN + 1u) {
            // Length l = i + 1: the x and the canonical rank where its codes start (code k of length l covers
            // indices [a, a + 2^(11−l)) of x).
            uint l = i + 1u, st = 0u, rk = 0u;
            for (uint j = 1u; j < l; j++) {
                st += dtab[BB + j] << (HUFF_MAX_LEN - j);
                rk += dtab[BB + j];
            }
            CSTART(l) = st;
            CRANK(l) = rk;
        }
        teamBarrier();
        if (!skip && !raw) {
            uint end = CSTART(HUFF_MAX_LEN + 1u), WMAX = min(uint(findMSB(TABN)), 9u);
            uint W = min(L1MIN, WMAX), B = CSTART(W + 1u);
            while (W < WMAX && end - B > TABN - (1u << W)) B = CSTART(++W + 1u);
            wide = end - B > TABN - (1u << W);
            if (wide) B = CSTART((W = WWIDE) + 1u);
            single = CRANK(HUFF_MAX_LEN + 1u) == 1u;
            // Entries read: the first level, the second up to the code's end; with a single-symbol code, all (no
            // code from x = 1024 on: entries 0); a WIDE chunk's up to its last CRANK.
            uint ne = single ? TABN : (wide ? WOFF + HUFF_MAX_LEN + 1u : (1u << W) + end - B);
            for (uint w = i; 2u * w < ne; w += TEAM) TAB2(w, tableEntry(2u * w, W, B, end, RA, SB, wide),
                                                       tableEntry(2u * w + 1u, W, B, end, RA, SB, wide));
            if (i == 0u) {
                tB[team] = B;
                tW[team] = W | (wide ? 16u : 0u);
            }
        }
        teamBarrier(); // decode tables built
        uint B = tB[team], M = (1u << (tW[team] & 15u)) - 1u, CAP = TABN - 2u - M;
        wide = tW[team] >= 16u;
        uint bad = 0u;
        uint ci = laneValues(m, i);
        bool emit = !skip;
        // The lane's words reach the chain through its ring in shared memory, 16 slots (word w at slot w % 16) that
        // only the lane's own invocation writes and reads. The chain's window (decodeStep) holds words k2−2, k2−1
        // and nx = word k2; a block's 16 codes take at most 176 bits, so its chain reads ring words k2 .. k2+6 (nx
        // is read again while the window stays). The ring holds words up to f ≥ k2 + 6 at every block's start. Each
        // block loads RFILL words f+1 .. (those below k2 + 16: their slots hold words before k2) at its start
        // and stores them after its chain, so the loads' latency hides behind the chain; KV lanes advance ~1.5
        // words per block. A lane that falls short (f < k2 + 6 after a block: codes of more than 2·32/16 bits on
        // average) loads up to 8 more words at once before the next block. Every lane loads at the same step: in
        // SIMT a register loaded by one lane stalls the whole subgroup at its next use by any lane.
        uint lb = pc.pieceBase + off + rel; // the lane's first word in the piece binding
        uint f = 15u;                       // the ring's last word
        if (dec) {
            [[unroll]] for (uint r = 0u; r < 4u; r++) {
                RING(r) = r0[r];
                RING(4u + r) = r1[r];
                RING(8u + r) = r2[r];
                RING(12u + r) = r3[r];
            }
        }
        // The chain's window in registers (decodeStep).
        uint c0 = 0u, c1 = 0u, nx = 0u, sh = 0u, k2 = 2u;
        if (dec) {
            c0 = RING(0u);
            c1 = RING(1u);
            nx = RING(2u);
        }
        uint vt = 16u * i; // this invocation's first value in every block
        // Low words of blocks bk .. bk+LOWPF−1 in lw[0 ..]: each load is issued LOWPF blocks before its use, and the
        // registers move down a place per block (a loop body of one block: four blocks unrolled to index lw by
        // constants made the loop four times as long and took 6 more registers; H200 874 → 958 GB/s without them).
        uvec4 lw[3];
        [[unroll]] for (uint r = 0u; r < 3u; r++) {
            lw[r] = emit && r < LOWPF ? lowQuad(v0 / 4u + (512u * r + vt) / 4u) : uvec4(0u);
        }
        [[dont_unroll]] for (uint bk = 0u; bk < NBLK; bk++) {
            uvec4 ln = emit && bk + LOWPF < NBLK ? lowQuad(v0 / 4u + (512u * (bk + LOWPF) + vt) / 4u) : uvec4(0u);
            if (dec) {
                // Words inside the lane (so inside the piece by the structure checks), past its end zeros.
                uint lead = f - k2, rw[4];
                [[unroll]] for (uint s = 0u; s < RFILL; s++) {
                    uint w = f + 1u + s;
                    rw[s] = lead + s < 15u && w < nw ? pieces[lb + w] : 0u;
                }
                // The serial decode chain, four codes to a staging word. A full block (every lane of every full
                // chunk, unless its code has a single symbol) is unrolled: no position checks, constant shifts,
                // no check for a pattern that starts no code (a complete code has none), and the window moves
                // once per two codes (decodePair).
                uint lim = ci > bk * BP ? min(ci - bk * BP, BP) : 0u; // the lane's positions in this block
                if (lim == BP && !single && !wide) {
                    [[unroll]] for (uint g = 0u; g < BP / 4u; g++) {
                        uint a = decodePair(c0, c1, nx, sh, k2, B, TR, M, CAP, RB);
                        a |= decodePair(c0, c1, nx, sh, k2, B, TR, M, CAP, RB) << 16;
                        stg[team * 36u + 9u * g + (i >> 2)][i & 3u] = a;
                    }
                } else {
                    uint a = 0u;
                    [[dont_unroll]] for (uint q = 0u; q < lim; q++) {
                        a |= decodeStep(c0, c1, nx, sh, k2, bad, B, TR, M, CAP, RB, true, wide)
                            << (8u * (q & 3u));
                        if ((q & 3u) == 3u || q + 1u == lim) {
                            stg[team * 36u + 9u * (q >> 2) + (i >> 2)][i & 3u] = a;
                            a = 0u;
                        }
                    }
                }
                // The words loaded at the block's start, into slots the chain has passed; then the rare refill.
                [[unroll]] for (uint s = 0u; s < RFILL; s++) {
                    if (lead + s < 15u) RING((f + 1u + s) & 15u) = rw[s];
                }
                f += lead < 15u ? min(RFILL, 15u - lead) : 0u;
                if (f < k2 + 6u) {
                    uint cw[8];
                    [[unroll]] for (uint s = 0u; s < 8u; s++) {
                        cw[s] = f + 1u + s < nw ? pieces[lb + f + 1u + s] : 0u;
                    }
                    [[unroll]] for (uint s = 0u; s < 8u; s++) RING((f + 1u + s) & 15u) = cw[s];
                    f += 8u;
                }
            }
            teamBarrier();
            uint vb = 512u * bk + vt; // value index in the chunk of this invocation's 16
            if (emit && vb < m) {
                uvec4 lq = lw[0];
                uvec4 e0, e1, e2, e3;
                if (raw) {
                    uint pb = off + vb / 4u;
                    e0 = bytes4(pieceWord(pb));
                    e1 = bytes4(pieceWord(pb + 1u));
                    e2 = bytes4(pieceWord(pb + 2u));
                    e3 = bytes4(pieceWord(pb + 3u));
                } else {
                    // Values 16i .. 16i+15: position i/2, lanes 16(i%2) .. +15.
                    uint sb = team * 36u + 9u * (i >> 3) + 4u * (i & 1u), es = 8u * ((i >> 1) & 3u);
                    e0 = (stg[sb] >> es) & 255u;
                    e1 = (stg[sb + 1u] >> es) & 255u;
                    e2 = (stg[sb + 2u] >> es) & 255u;
                    e3 = (stg[sb + 3u] >> es) & 255u;
                }
                uvec4 o0 = uvec4(spread2(lq.x & 0xFFFFu) | (e0.x << 7) | (e0.y << 23),
                                 spread2(lq.x >> 16) | (e0.z << 7) | (e0.w << 23),
                                 spread2(lq.y & 0xFFFFu) | (e1.x << 7) | (e1.y << 23),
                                 spread2(lq.y >> 16) | (e1.z << 7) | (e1.w << 23));
                uvec4 o1 = uvec4(spread2(lq.z & 0xFFFFu) | (e2.x << 7) | (e2.y << 23),
                                 spread2(lq.z >> 16) | (e2.z << 7) | (e2.w << 23),
                                 spread2(lq.w & 0xFFFFu) | (e3.x << 7) | (e3.y << 23),
                                 spread2(lq.w >> 16) | (e3.z << 7) | (e3.w << 23));
                if (vb + 16u > m) {
                    // The chunk's (the tensor's) end: nothing of the values from m on.
                    [[unroll]] for (uint r = 0u; r < 4u; r++) {
                        uint va = vb + 2u * r, vc = vb + 8u + 2u * r;
                        o0[r] = va >= m ? 0u : (va + 1u >= m ? o0[r] & 0xFFFFu : o0[r]);
                        o1[r] = vc >= m ? 0u : (vc + 1u >= m ? o1[r] & 0xFFFFu : o1[r]);
                    }
                }
                uint di = (v0 + vb) / 2u;
                if ((pc.dstBase & 3u) == 0u && di + 7u < pc.dstWords) {
                    dstv[(pc.dstBase + di) / 4u] = o0;
                    dstv[(pc.dstBase + di) / 4u + 1u] = o1;
                } else {
                    [[unroll]] for (uint r = 0u; r < 4u; r++) {
                        if (di + r < pc.dstWords) dst[pc.dstBase + di + r] = o0[r];
                        if (di + 4u + r < pc.dstWords) dst[pc.dstBase + di + 4u + r] = o1[r];
                    }
                }
            }
            teamBarrier(); // staging read before the next block writes it
            lw[0] = LOWPF > 1u ? lw[1] : ln;
            lw[1] = LOWPF > 2u ? lw[2] : ln;
            lw[2] = ln;
        }
        if (dec) {
            // Lane ends: enough words, no extra word, zero bits after the last code.
            uint pos = 32u * (k2 - 2u) + sh; // the lane's bits
            if (pos > 32u * nw) bad |= 1u;
            else if ((pos + 31u) / 32u != nw) bad |= 2u;
            else if ((pos & 31u) != 0u && (pieceWord(off + rel + pos / 32u) >> (pos & 31u)) != 0u) bad |= 2u;
        }
        if (!skip && i == 0u) {
            if (ncCRC) bad |= 2u;
            // Low-stream padding of the last chunk.
            if (last && m % 4u != 0u && (lowWord(v0 / 4u + m / 4u) >> (8u * (m % 4u))) != 0u) bad |= 2u;
            if (raw) {
                if (m % 4u != 0u && (pieceWord(off + m / 4u) >> (8u * (m % 4u))) != 0u) bad |= 2u;
            } else {
                if ((tFlag[team] & 2u) != 0u) bad |= 2u; // table padding
                if (size >= rawSize) bad |= 2u;
            }
        }
        if (!skip && raw && i == 0u) {
            tRaw[team] = 1u;
            tOff[team] = off;
            tM[team] = m;
            sAnyRaw = 1u;
        }
        barrier();
        if (sAnyRaw != 0u) {
            // A raw chunk is canonical only if vkzip's code would not make its piece smaller. The code is built in
            // the decode tables' rows, idle now that every chunk of the workgroup is decoded.
            for (uint r = 0u; r < K; r++) {
                if (tRaw[r] != 0u) {
                    uint ro = tOff[r], rm = tM[r];
                    for (uint x = t; x < 256u; x += WG) A_cnt(x) = 0u;
                    barrier();
                    for (uint j = t; j < rm; j += WG) atomicAdd(A_cnt(pieceByte(4u * ro + j)), 1u);
                    barrier();
                    buildLengthsWG();
                    barrier();
                    for (uint l = t; l < LANES; l += WG) {
                        uint lb = 0u;
                        for (uint p = 0u; p < laneValues(rm, l); p++) lb += A_lens(pieceByte(4u * ro + p * LANES + l));
                        rawLW[l] = (lb + 31u) / 32u;
                    }
                    barrier();
                    if (t == 0u) {
                        uint sz = tableBytes(sLo, sHi) + 4u * HUFF_COUNTS_WORDS;
                        for (uint l = 0u; l < LANES; l++) sz += 4u * rawLW[l];
                        if (sz < ((rm + 3u) & ~3u)) atomicOr(tBad[r], 2u);
                    }
                    barrier();
                }
            }
        }
        if (!skip && bad != 0u) atomicOr(tBad[team], bad);
        barrier();
        uint tbad = tBad[team];
        if (!skip && i == 0u && tbad != 0u) report(3u, (c << 1) | ((tbad & 1u) != 0u ? 0u : 1u));
        barrier();
    }
}
