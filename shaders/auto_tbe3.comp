#version 450
// auto encode of BF16, pass 2 of 2 (docs/FORMAT.md §11, §12): the TBE-3 pieces. One workgroup per chunk whose pass 1
// choice is tbe3 (grid-stride; others are skipped) codes the chunk as a one-chunk TBE-3 body directly at its piece
// offset in the auto body: plane and SM pieces, the table entry, the side piece, the chunk's CRC-32C, and the auto
// table entry. The window and fallback count come from pass 1's info word, so the chunk's values are read once.
//
// The values are read as SplitZip-4's encoder reads them, an 8-value slot (16 bytes) per invocation, contiguous
// across the workgroup, and the SM piece written the same way (8 bytes per slot). A group of 4 slot iterations
// (4·WG slots = WG 32-value units) collects its code bits in shared plane words and its exponents in shared memory;
// then invocation t takes unit t of the group: writes its three plane words (contiguous across the workgroup), adds
// them to its CRC registers, and places the unit's fallback exponents at ranks from an ordered scan, staged in
// shared memory (a raw chunk's exponents go straight to the body).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_AUTO_TBE3
#include "contracts.glsl"
#include "auto_common.glsl"
#include "common.glsl"
#define CRC_SHARED_HOT
#include "crc_tables.glsl"
#include "auto_crc.glsl"

const uint UNITS = N / 32u;        // 32-value units per full chunk
const uint GROUPS = UNITS / WG;    // groups of WG units per chunk (WG divides UNITS: the host checks)
const uint SIDE_CAP = 2048u;       // side words staged in shared memory; the rest are ORed into the body
shared uint sideSh[SIDE_CAP];
shared uint planeSh[3u * WG];      // the group's plane words, plane p of unit t at p·WG + t
shared uint expSh[8u * WG];        // the group's exponents, four to a word in value order

uint tiles(uint m) { return (m + TBE3_TILE_VALUES - 1u) / TBE3_TILE_VALUES; }

uint expAt(uint c, uint v) {
    uint w = srcw[4u * pc.srcBase + (c * N + v) / 2u];
    return ((v & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
}

// presentMask has a bit for each of a unit's values that lie inside the chunk.
uint presentMask(uint u, uint m) {
    uint v0 = 32u * u;
    if (v0 >= m) return 0u;
    return m - v0 >= 32u ? 0xFFFFFFFFu : (1u << (m - v0)) - 1u;
}

uint sideW; // word of the chunk's side piece in out
bool rawChunk;
#define HEAD_WORD(q) ((rawChunk || (q) >= SIDE_CAP) ? outw[sideW + (q)] : sideSh[q])

void main() {
    uint t = gl_LocalInvocationID.x;
    uint C = pc.chunks;
    uint kc = 0u;
    bool ready = false;
    for (uint i = gl_WorkGroupID.x; i < C; i += gl_NumWorkGroups.x) {
        uint c = C - 1u - i; // the last chunks first: pass 1 read them last, so some may still be cached
        if (work[2u * C + 1u + c] != FORMAT_TBE3) continue; // uniform: one chunk per workgroup
        if (!ready) { // a workgroup with none of its format's chunks leaves without loading tables
            loadTables();
            kc = consts[CONST_KC + t];
            for (uint p = 0u; p < 3u; p++) planeSh[p * WG + t] = 0u;
            ready = true;
        }
        bool last = c == C - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = meta[c];
        rawChunk = (info >> KIND_SHIFT) == CHUNK_RAW;
        uint w = (info >> TBE3_WINDOW_SHIFT) & TBE3_WINDOW_MASK, k = info & TBE3_COUNT_MASK;
        uint off = pieceOffset(c, C);
        uint pw = 2u * tiles(m);           // words per plane
        uint smWords = (m + 3u) / 4u;
        uint pBase = pc.outBase + CHUNK_ENTRY_WORDS * C + off / 4u;
        uint sBase = pBase + 3u * pw;
        uint eBase = sBase + smWords;
        sideW = eBase + CHUNK_ENTRY_WORDS;
        uint sideWords = rawChunk ? tbe3RawSide(m) / 4u : (k + 3u) / 4u;
        if (!rawChunk) {
            // Fallback bytes are ORed into zeroed words, four to a word from different invocations.
            for (uint q = t; q < min(sideWords, SIDE_CAP); q += WG) sideSh[q] = 0u;
            for (uint q = SIDE_CAP + t; q < sideWords; q += WG) outw[sideW + q] = 0u;
            memoryBarrierBuffer();
        }
        if (t == 0u) carry = 0u;
        barrier();

        uint aP0 = 0u, aP1 = 0u, aP2 = 0u, aL0 = 0u, aL1 = 0u;
        for (uint g = 0u; g < GROUPS; g++) {
            uvec4 xs[4];
            uint vs[4];
            [[unroll]] for (uint i = 0u; i < 4u; i++) xs[i] = loadSlot(c, (4u * g + i) * WG + t, m, vs[i]);
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                uint gs = i * WG + t, s = 4u * g * WG + gs; // slot within the group, within the chunk
                uvec4 x = xs[i];
                uint p0 = 0u, p1 = 0u, p2 = 0u, e0 = 0u, e1 = 0u;
                [[unroll]] for (uint b = 0u; b < 8u; b++) {
                    uint e = (x[b >> 1] >> (7u + 16u * (b & 1u))) & 0xFFu, d = e - w;
                    uint code = d < TBE3_WINDOW && (vs[i] & (1u << b)) != 0u ? d + 1u : 0u;
                    p0 |= (code & 1u) << b;
                    p1 |= ((code >> 1) & 1u) << b;
                    p2 |= (code >> 2) << b;
                    if (b < 4u) e0 |= e << (8u * b); else e1 |= e << (8u * (b - 4u));
                }
                uint sh = 8u * (gs & 3u), ui = gs >> 2; // the slot's byte of its unit's plane words
                atomicOr(planeSh[ui], p0 << sh);
                atomicOr(planeSh[WG + ui], p1 << sh);
                atomicOr(planeSh[2u * WG + ui], p2 << sh);
                expSh[2u * gs] = e0;
                expSh[2u * gs + 1u] = e1;
                uint lw0 = lows2(x.x) | (lows2(x.y) << 16);
                uint lw1 = lows2(x.z) | (lows2(x.w) << 16);
                if (8u * s < m) {
                    storePair(sBase + 2u * s, lw0, lw1, 8u * s + 4u < m);
                }
                if (pc.checksums != 0u) {
                    aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                    aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
                }
            }
            barrier();
            uint u = g * WG + t; // this invocation's unit
            uint pm = presentMask(u, m);
            uint q0 = planeSh[t], q1 = planeSh[WG + t], q2 = planeSh[2u * WG + t];
            planeSh[t] = 0u; // for the next group: its first ORs come after this group's last barrier
            planeSh[WG + t] = 0u;
            planeSh[2u * WG + t] = 0u;
            uint z = ~(q0 | q1 | q2) & pm; // the unit's fallbacks
            if (rawChunk) {
                // Raw: the plane piece holds exponent bytes (word q: values 4q..4q+3), zeros past m.
                z = 0u;
                for (uint p = 0u; p < 3u; p++) {
                    uint q = p * pw + u, wd = 0u;
                    for (uint b = 0u; b < 4u; b++) {
                        uint v = 4u * q + b;
                        if (v < m) wd |= expAt(c, v) << (8u * b);
                    }
                    if (p == 0u) q0 = wd; else if (p == 1u) q1 = wd; else q2 = wd;
                }
            }
            if (u < pw) {
                outw[pBase + u] = q0;
                outw[pBase + pw + u] = q1;
                outw[pBase + 2u * pw + u] = q2;
            } else {
                q0 = 0u; q1 = 0u; q2 = 0u;
            }
            if (pc.checksums != 0u) {
                aP0 = shiftBy(TAB_M4T, aP0) ^ q0;
                aP1 = shiftBy(TAB_M4T, aP1) ^ q1;
                aP2 = shiftBy(TAB_M4T, aP2) ^ q2;
            }
            if (!rawChunk && k != 0u) {
                uint rank = scanStep(bitCount(z)); // uniform: the chunk decides
                for (; z != 0u; z &= z - 1u) {
                    uint v = 32u * t + findLSB(z), r = min(rank, k - 1u); // pass 1 counted k; bounded all the same
                    uint e = ((expSh[v >> 2] >> (8u * (v & 3u))) & 0xFFu) << (8u * (r & 3u));
                    if (r / 4u < SIDE_CAP) atomicOr(sideSh[r / 4u], e);
                    else atomicOr(outw[sideW + r / 4u], e);
                    rank++;
                }
            }
            barrier(); // expSh and planeSh are read before the next group writes them
        }
        if (rawChunk) {
            // The exponents of values P(m) .. m-1, four to a word.
            uint pBytes = tbe3PlanePiece(m);
            for (uint q = t; q < sideWords; q += WG) {
                uint wd = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint v = pBytes + 4u * q + b;
                    if (v < m) wd |= expAt(c, v) << (8u * b);
                }
                outw[sideW + q] = wd;
            }
        }
        memoryBarrierShared();
        memoryBarrierBuffer();
        barrier();
        if (!rawChunk)
            for (uint q = t; q < min(sideWords, SIDE_CAP); q += WG) outw[sideW + q] = sideSh[q];
        uint crc = 0u;
        if (pc.checksums != 0u) {
            // Linear CRC of plane piece || SM piece: the planes' registers ran over units g·WG + t (as tbe3_encode's),
            // the SM registers over slots as SplitZip-4's low piece (sz4_encode).
            uint x0 = wgXor(mulmod(aP0, kc)), x1 = wgXor(mulmod(aP1, kc)), x2 = wgXor(mulmod(aP2, kc));
            uint xs = wgXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
            uint lin = 0u;
            uint smb = 4u * smWords;
            if (t == 0u) {
                if (pw != UNITS) { // the registers covered UNITS words per plane: drop the zero tail
                    uint inv = xinv(4u * (UNITS - pw));
                    x0 = mulmod(x0, inv);
                    x1 = mulmod(x1, inv);
                    x2 = mulmod(x2, inv);
                }
                if (smb != N) xs = mulmod(xs, xinv(N - smb));
                uint pl = mulmod(x0, xpow(8u * pw)) ^ mulmod(x1, xpow(4u * pw)) ^ x2;
                lin = mulmod(pl, xpow(smb)) ^ xs;
            }
            HEAD_CRC(crc, info, sideWords, 12u * pw + smb, lin);
        }
        if (t == 0u) {
            outw[eBase + ENTRY_INFO] = info;
            outw[eBase + ENTRY_SIDE_OFF] = 0u;
            outw[eBase + ENTRY_CRC] = crc;
            uint aInfo = FORMAT_TBE3 << KIND_SHIFT, aOff = off / 4u;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = aInfo;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = aOff;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = pc.checksums != 0u ? autoEntryCRC(aInfo, aOff) : 0u;
            if (last) work[2u * C] = off + work[c]; // the pieces' total, which the host reads back
        }
        barrier(); // sideSh and carry are free for the next chunk
    }
}
