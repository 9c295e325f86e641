#version 450
// huff encode, pass 1 of 3 (docs/FORMAT.md §14): one workgroup per chunk (grid-stride). Low bytes go to their fixed
// offsets while a shared histogram (8 copies of 16-bit counters, against atomic contention) counts the exponents
// and, for chunks up to 2^CACHE_SHIFT values, the exponents are kept in shared memory for the later pass over them;
// the workgroup ranks the present symbols and one invocation merges them into the chunk's canonical code (§14.3);
// every invocation packs the codes of a segment of one lane (WG = 32·segments per lane) from bit 0 into an array of
// its own, which gives the segment's size; the lane sizes give the piece size, which decides coded or raw.
// The piece is written to the chunk's scratch slot (every word of it, so the slot needs no clearing): code table,
// lane word counts and lane words, each segment's words moved to its bit offset within its lane (a word shared by
// two segments is written by the one holding its first bit, with the other's bits passed through shared memory).
// The info word goes to the table and the piece size to a per-64-chunk sum for pass 2 (sz4_scan); pass 3
// (huff_place) moves pieces to their offsets and computes CRCs.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "layout.glsl"
#include "common.glsl"
#define KERNEL_HUFF_ENCODE
#include "contracts.glsl"
// Shared memory bounds the workgroups an SM holds (about 100 KiB per SM on the H200), so the phases share one arena
// (huff_common's A_* arrays, 1792 words or more): while the source is read, the histogram's 8 copies of 16-bit
// counters at words [256, 1288), copy t % 8 at word 129·(t % 8) from there (the copies of a count in different banks);
// the halving-round probe in the same words once the counts are summed into A_cnt (words [0, 256)); after the code
// is built, the segments' bit counts and head words in words [512, 512 + 2·WG), where the construction's keys,
// queues and parents were (lens, at [256, 512), and rc stay).
#define HIST(i) arena[256u + (i)]
#define HUFF_PROBE(i) arena[256u + (i)]
#define SEG_BITS(i) arena[512u + (i)]
#define HEAD_W(i) arena[512u + WG + (i)]
#define HUFF_ARENA arena
#define HUFF_ARENA_WORDS (512u + 2u * WG > 1792u ? 512u + 2u * WG : 1792u)
#include "huff_common.glsl"

const uint SEGS = WG / LANES;
const uint PS0 = ((PMAX + SEGS - 1u) / SEGS + 7u) & ~7u; // a multiple of 8: full segments go eight at a time
const uint PS = PS0 < 32u ? 32u : PS0; // positions per lane segment (≥ 32: see the lane words' write)
const uint PROVW = (PS * HUFF_MAX_LEN + 31u) / 32u; // words of a segment's codes, at most

// PACK appends len ≤ 22 bits (a code, or two codes joined) to the segment's words in prov: acc holds the nb bits
// of word wi so far. (A macro: a function would copy prov in and out.)
#define PACK(code, len)                                                                  \
    {                                                                                    \
        uint c_ = (code), n_ = (len);                                                    \
        acc |= c_ << nb;                                                                 \
        uint sp_ = nb + n_ >= 32u ? (nb == 0u ? 0u : c_ >> (32u - nb)) : 0u;             \
        nb += n_;                                                                        \
        if (nb >= 32u) {                                                                 \
            prov[wi] = acc;                                                              \
            wi++;                                                                        \
            nb -= 32u;                                                                   \
            acc = sp_;                                                                   \
        }                                                                                \
    }

// Chunks of up to 2^CACHE_SHIFT values keep their exponents in shared memory (16 KiB at 2^14); larger ones read them
// from the source again: at 2^15 a 32 KiB cache halves the workgroups an SM holds and costs more than it saves.
const bool CACHE = SHIFT <= CACHE_SHIFT;
shared uint ex[CACHE ? N / 4u : 1u]; // the chunk's exponents, 4 per word
// SEG_BITS(t): a segment's bits; then its first bit within its lane. HEAD_W(t): a segment's bits in the first word of
// its lane segment when that word began earlier.
shared uint laneWords[LANES];
shared uint laneAt[LANES]; // a lane's first word within the piece's lane words
shared uint sSize, sCoded;

uint half16(uint i) {
    uint w = (i >> 1) < pc.srcWords ? src[pc.srcBase + (i >> 1)] : 0u;
    return (w >> (16u * (i & 1u))) & 0xFFFFu;
}

uint expAt(uint i) { return (half16(i) >> 7) & 255u; }

// expC is the exponent of value j of the chunk starting at value v0.
uint expC(uint v0, uint j) { return CACHE ? (ex[j / 4u] >> (8u * (j % 4u))) & 255u : expAt(v0 + j); }

void main() {
    uint t = gl_LocalInvocationID.x;
    uint l = t % LANES, sg = t / LANES;
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint v0 = c * N;
        for (uint i = t; i < 8u * 129u; i += WG) HIST(i) = 0u;
        barrier();
        uint W4 = (m + 3u) / 4u, hr = (t % 8u) * 129u;
        for (uint q0 = t; q0 < W4; q0 += WG * BATCH) {
            uint a[BATCH], b[BATCH];
            [[unroll]] for (uint k = 0u; k < BATCH; k++) {
                uint q = q0 + k * WG, wi = v0 / 2u + 2u * q;
                a[k] = q < W4 && wi < pc.srcWords ? src[pc.srcBase + wi] : 0u;
                b[k] = q < W4 && wi + 1u < pc.srcWords ? src[pc.srcBase + wi + 1u] : 0u;
            }
            [[unroll]] for (uint k = 0u; k < BATCH; k++) {
                uint q = q0 + k * WG;
                if (q >= W4) break;
                uint lw = 0u, ew = 0u;
                for (uint u = 0u; u < 4u; u++) {
                    if (4u * q + u >= m) break;
                    uint v = ((u < 2u ? a[k] : b[k]) >> (16u * (u & 1u))) & 0xFFFFu;
                    uint e = (v >> 7) & 255u;
                    lw |= (((v >> 8) & 0x80u) | (v & 0x7Fu)) << (8u * u);
                    ew |= e << (8u * u);
                    atomicAdd(HIST(hr + e / 2u), 1u << (16u * (e & 1u)));
                }
                uint wi = v0 / 4u + q;
                if (wi < pc.lowWords) lows[pc.lowBase + wi] = lw;
                if (CACHE) ex[q] = ew;
            }
        }
        barrier();
        for (uint e = t; e < 256u; e += WG) {
            uint n = 0u;
            for (uint r = 0u; r < 8u; r++) n += (HIST(r * 129u + e / 2u) >> (16u * (e & 1u))) & 0xFFFFu;
            A_cnt(e) = n;
        }
        barrier();
        bool built = probeRounds();
        if (!built) buildLengthsWG();
        canonicalWG();
        barrier();
        uint cntL = laneValues(m, l);
        uint p0 = min(sg * PS, cntL), p1 = min(p0 + PS, cntL);
        // This segment's codes packed from bit 0 into prov (a per-invocation array: local memory, cached), its
        // size known as they are packed; once the lanes' sizes give the segment's first bit, it is moved there.
        // (A separate sizing pass over the codes cost more than the move.)
        uint prov[PROVW];
        uint acc = 0u, nb = 0u, wi = 0u;
        uint pe = p1;
        if (pe - p0 == PS) {
            // A full segment, unrolled: no position checks.
            [[unroll]] for (uint p = p0; p < p0 + PS; p += 4u) {
                uint cs[4];
                [[unroll]] for (uint u = 0u; u < 4u; u++) cs[u] = rc[expC(v0, (p + u) * LANES + l)];
                // Codes joined in pairs off the chain (rc: bit-reversed code | length << 16, 11 bits at most),
                // so the packing chain takes half the steps.
                [[unroll]] for (uint u = 0u; u < 4u; u += 2u) {
                    uint l0 = cs[u] >> 16;
                    PACK((cs[u] & 0xFFFFu) | ((cs[u + 1u] & 0xFFFFu) << l0), l0 + (cs[u + 1u] >> 16));
                }
            }
        } else {
            for (uint p = p0; p < pe; p += 4u) {
                // Four codes looked up together (independent of the packing chain), then packed in order.
                uint cs[4];
                [[unroll]] for (uint u = 0u; u < 4u; u++) cs[u] = p + u < pe ? rc[expC(v0, (p + u) * LANES + l)] : 0u;
                [[unroll]] for (uint u = 0u; u < 4u; u++) PACK(cs[u] & 0xFFFFu, cs[u] >> 16);
            }
        }
        if (nb > 0u) prov[wi] = acc;
        uint bits = 32u * wi + nb;
        SEG_BITS(t) = bits;
        barrier();
        if (t < LANES) {
            // The lane's size, and each of its segments' first bit (so the segments need no sums of their own).
            uint lb = 0u;
            for (uint s = 0u; s < SEGS; s++) {
                uint b = SEG_BITS(s * LANES + t);
                SEG_BITS(s * LANES + t) = lb;
                lb += b;
            }
            laneWords[t] = (lb + 31u) / 32u;
        }
        barrier();
        uint lo = sLo, hi = sHi;
        uint tb = tableBytes(lo, hi);
        if (t == 0u) {
            uint size = tb + 4u * HUFF_COUNTS_WORDS;
            for (uint k = 0u; k < LANES; k++) {
                laneAt[k] = (size - tb) / 4u - HUFF_COUNTS_WORDS;
                size += 4u * laneWords[k];
            }
            uint raw = (m + 3u) & ~3u;
            bool coded = size < raw;
            sSize = coded ? size : raw;
            sCoded = coded ? 1u : 0u;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = coded ? (size / 4u) : (CHUNK_RAW << KIND_SHIFT);
            atomicAdd(blockSum[c >> 6], sSize);
        }
        barrier();
        uint slot = c * (N / 4u);
        if (sCoded != 0u) {
            // Code table and lane counts.
            for (uint q = t; q < tb / 4u + HUFF_COUNTS_WORDS; q += WG) {
                uint w = 0u;
                if (q < tb / 4u) {
                    for (uint u = 0u; u < 4u; u++) {
                        uint b = 4u * q + u, v = 0u;
                        if (b == 0u) v = lo;
                        else if (b == 1u) v = hi;
                        else {
                            uint i = 2u * (b - 2u);
                            if (lo + i <= hi) v = A_lens(lo + i);
                            if (lo + i + 1u <= hi) v |= A_lens(lo + i + 1u) << 4;
                        }
                        w |= v << (8u * u);
                    }
                } else {
                    uint k = 2u * (q - tb / 4u);
                    w = laneWords[k] | (laneWords[k + 1u] << 16);
                }
                scratch[slot + q] = w;
            }
            // This segment's bits [0, bits) go to lane bits [start, start + bits): lane word w0 + k takes segment
            // bits from 32k − sh on. A word belongs to the segment holding its first bit: the bits of our first
            // word, when it began earlier, go to its owner as our head (all segments but the last non-empty one
            // span at least PS ≥ 32 bits, so no word holds bits of three segments); our last word, when partial,
            // waits for the next segment's head.
            uint at = slot + tb / 4u + HUFF_COUNTS_WORDS + laneAt[l];
            uint start = SEG_BITS(t);
            uint w0 = start / 32u, sh = start % 32u, pw = (bits + 31u) / 32u;
            uint kf = (start + bits) / 32u - w0; // words below kf are complete
            uint prev = prov[0];                  // array word k − 1 (k ≥ 1 whenever sh != 0)
            HEAD_W(t) = sh != 0u && bits > 0u ? prev << sh : 0u;
            uint k = sh != 0u ? 1u : 0u;
            for (; k < kf; k++) {
                uint b = k < pw ? prov[k] : 0u;
                scratch[at + w0 + k] = sh == 0u ? b : (prev >> (32u - sh)) | (b << sh);
                prev = b;
            }
            bool tail = bits > 0u && (start + bits) % 32u != 0u && k == kf; // k == kf: the word began here
            uint tw = 0u;
            if (tail) {
                uint b = kf < pw ? prov[kf] : 0u;
                tw = sh == 0u ? b : (prev >> (32u - sh)) | (b << sh);
            }
            barrier();
            if (tail) scratch[at + w0 + kf] = tw | (sg + 1u < SEGS ? HEAD_W(t + LANES) : 0u);
        } else {
            for (uint q = t; q < (m + 3u) / 4u; q += WG) {
                uint w = 0u;
                for (uint u = 0u; u < 4u; u++) {
                    uint j = 4u * q + u;
                    if (j < m) w |= expC(v0, j) << (8u * u);
                }
                scratch[slot + q] = w;
            }
        }
        barrier();
    }
}
