#version 450
// auto encode of BF16, pass 2 of 2 (docs/FORMAT.md §11, §5): the SplitZip-4 pieces. One workgroup per chunk whose pass 1
// choice is splitzip4 (grid-stride; others are skipped) codes the chunk as a one-chunk SplitZip-4 body directly at
// its piece offset in the auto body: code and low pieces, the table entry, the side piece (escapes at ranks from an
// ordered scan of each slot's escapes; a raw chunk's second half of exponents), the chunk's CRC-32C, and the auto
// table entry. Pass 1's info word says raw or the escape count, so the chunk's values are read once here.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_AUTO_SZ4
#include "contracts.glsl"
#include "auto_common.glsl"
#include "common.glsl"
#define CRC_SHARED_HOT
#include "crc_tables.glsl"
#include "auto_crc.glsl"

const uint ITERS = SLOTS / WG; // slots per invocation (WG divides SLOTS: the host checks)
const uint ESC_FLAG = 0x100u;
shared uint lut[256];          // exponent -> code, or ESC_FLAG alone when escaped

uint expAt(uint c, uint v) {
    uint w = srcw[4u * pc.srcBase + (c * N + v) / 2u];
    return ((v & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
}

uint sideW; // word of the chunk's side piece in out
#define HEAD_WORD(q) outw[sideW + (q)]

void main() {
    uint t = gl_LocalInvocationID.x;
    uint C = pc.chunks;
    bool ready = false;
    for (uint i = gl_WorkGroupID.x; i < C; i += gl_NumWorkGroups.x) {
        uint c = C - 1u - i; // the last chunks first: pass 1 read them last, so some may still be cached
        if (work[2u * C + 1u + c] != FORMAT_SPLITZIP4) continue; // uniform: one chunk per workgroup
        if (!ready) { // a workgroup with none of its format's chunks leaves without loading tables
            loadTables();
            for (uint e = t; e < 256u; e += WG) {
                uint code = ESC_FLAG;
                for (uint q = 0u; q < 16u; q++) {
                    if (((pc.cb[q >> 2] >> ((q & 3u) * 8u)) & 0xFFu) == e) code = q;
                }
                lut[e] = code;
            }
            ready = true;
        }
        bool last = c == C - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = meta[c];
        bool raw = (info >> KIND_SHIFT) == CHUNK_RAW;
        uint k = raw ? 0u : info & COUNT_MASK;
        uint off = pieceOffset(c, C);
        uint codeW = align4((m + 1u) / 2u) / 4u, lowW = align4(m) / 4u;
        uint cBase = pc.outBase + CHUNK_ENTRY_WORDS * C + off / 4u;
        uint lBase = cBase + codeW;
        uint eBase = lBase + lowW;
        sideW = eBase + CHUNK_ENTRY_WORDS;
        uint sideWords = raw ? sz4RawSide(m) / 4u : k;
        if (t == 0u) carry = 0u;
        barrier();

        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        for (uint j = 0u; j < ITERS; j += U) {
            // U slots loaded first (slot j+u of every invocation is contiguous across the workgroup), then coded.
            uvec4 xs[U];
            uint vs[U];
            [[unroll]] for (uint u = 0u; u < U; u++) xs[u] = loadSlot(c, (j + u) * WG + t, m, vs[u]);
            [[unroll]] for (uint u = 0u; u < U; u++) {
                uint s = (j + u) * WG + t, v0 = 8u * s;
                uint valid = vs[u];
                uvec4 x = xs[u];
                uint cw = 0u, esc = 0u;
                [[unroll]] for (uint b = 0u; b < 8u; b++) {
                    uint code = lut[(x[b >> 1] >> (7u + 16u * (b & 1u))) & 0xFFu];
                    cw |= (code & 15u) << (4u * b);
                    esc |= (code >> 8) << b;
                }
                cw &= v0 + 8u <= m ? ~0u : (v0 < m ? (1u << (4u * (m - v0))) - 1u : 0u);
                esc &= valid;
                uint lw0 = lows2(x.x) | (lows2(x.y) << 16);
                uint lw1 = lows2(x.z) | (lows2(x.w) << 16);
                if (v0 < m) {
                    if (!raw) outw[cBase + s] = cw;
                    storePair(lBase + 2u * s, lw0, lw1, v0 + 4u < m);
                }
                if (pc.checksums != 0u) {
                    aC = shiftBy(TAB_M4T, aC) ^ cw;
                    aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                    aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
                }
                if (k != 0u) {
                    uint rank = scanStep(bitCount(esc)); // uniform: the chunk decides
                    for (; esc != 0u; esc &= esc - 1u) {
                        uint b = findLSB(esc), r = min(rank, k - 1u); // pass 1 counted exactly k; bounded all the same
                        uint e = (x[b >> 1] >> (7u + 16u * (b & 1u))) & 0xFFu;
                        outw[sideW + r] = (v0 + b) | (e << ESCAPE_EXP_SHIFT);
                        rank++;
                    }
                }
            }
        }
        if (raw) {
            // Raw chunk: exponent bytes, the first ceil(m/2) in the code piece, the rest in the side piece.
            uint h = (m + 1u) / 2u;
            aC = 0u;
            for (uint j = 0u; j < ITERS; j++) {
                uint q = j * WG + t, w = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint v = 4u * q + b;
                    if (v < h) w |= expAt(c, v) << (8u * b);
                }
                if (q < codeW) outw[cBase + q] = w;
                aC = shiftBy(TAB_M4T, aC) ^ w;
            }
            for (uint q = t; q < sideWords; q += WG) {
                uint w = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint v = h + 4u * q + b;
                    if (v < m) w |= expAt(c, v) << (8u * b);
                }
                outw[sideW + q] = w;
            }
        }
        memoryBarrierBuffer();
        barrier();
        uint crc = 0u;
        if (pc.checksums != 0u) {
            // Linear CRC of code piece || low piece from the per-invocation registers (as sz4_encode).
            uint linC = wgXor(mulmod(aC, consts[CONST_KC + t]));
            uint linL = wgXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
            uint linD = 0u;
            if (t == 0u) {
                if (last) {
                    linC = mulmod(linC, pc.invC);
                    linL = mulmod(linL, pc.invL);
                }
                linD = (last ? mulmod(linC, pc.shLowLast) : shiftBy(TAB_ML, linC)) ^ linL;
            }
            HEAD_CRC(crc, info, sideWords, 4u * (codeW + lowW), linD);
        }
        if (t == 0u) {
            outw[eBase + ENTRY_INFO] = info;
            outw[eBase + ENTRY_SIDE_OFF] = 0u;
            outw[eBase + ENTRY_CRC] = crc;
            uint aInfo = FORMAT_SPLITZIP4 << KIND_SHIFT, aOff = off / 4u;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = aInfo;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = aOff;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = pc.checksums != 0u ? autoEntryCRC(aInfo, aOff) : 0u;
            if (last) work[2u * C] = off + work[c]; // the pieces' total, which the host reads back
        }
        barrier(); // carry is free for the next chunk
    }
}
