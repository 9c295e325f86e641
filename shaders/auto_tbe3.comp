#version 450
// auto encode of BF16, pass 3 (docs/FORMAT.md §11, §12): the TBE-3 pieces. One workgroup per chunk whose pass 1
// choice is tbe3 (grid-stride; others are skipped) codes the chunk as a one-chunk TBE-3 body directly at its piece
// offset in the auto body: plane and SM pieces, the table entry, the side piece (fallback exponents at ranks from an
// ordered scan of each 32-value unit's fallbacks, staged in shared memory; a raw chunk's remaining exponents), the
// chunk's CRC-32C, and the auto table entry. The window and fallback count come from pass 1's info word, so the
// chunk's values are read once here.
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
const uint ITERS = UNITS / WG;     // units per invocation (WG divides UNITS: the host checks)
const uint SIDE_CAP = 2048u;       // side words staged in shared memory; the rest are ORed into the body
shared uint sideSh[SIDE_CAP];

uint tiles(uint m) { return (m + TBE3_TILE_VALUES - 1u) / TBE3_TILE_VALUES; }

uint expAt(uint c, uint v) {
    uint w = srcw[4u * pc.srcBase + (c * N + v) / 2u];
    return ((v & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
}

// loadUnit reads the 32 values of unit u of chunk c (zeros past m) as 16 words.
void loadUnit(uint c, uint u, uint m, out uvec4 x[4]) {
    uint valid;
    [[unroll]] for (uint i = 0u; i < 4u; i++) x[i] = loadSlot(c, 4u * u + i, m, valid);
}

// presentMask has a bit for each of a unit's values that lie inside the chunk.
uint presentMask(uint u, uint m) {
    uint v0 = 32u * u;
    if (v0 >= m) return 0u;
    return m - v0 >= 32u ? 0xFFFFFFFFu : (1u << (m - v0)) - 1u;
}

// blockCRC is the linear CRC register of 8 words (32 bytes).
uint blockCRC(uvec4 a, uvec4 b) {
    uint r = 0u;
    r = shiftBy(TAB_M4, r ^ a.x); r = shiftBy(TAB_M4, r ^ a.y); r = shiftBy(TAB_M4, r ^ a.z); r = shiftBy(TAB_M4, r ^ a.w);
    r = shiftBy(TAB_M4, r ^ b.x); r = shiftBy(TAB_M4, r ^ b.y); r = shiftBy(TAB_M4, r ^ b.z); r = shiftBy(TAB_M4, r ^ b.w);
    return r;
}

// stepSM advances an SM Horner register over one stride of WG blocks (32·WG bytes).
uint stepSM(uint a) { return shiftBy(TAB_M8T, shiftBy(TAB_M8T, shiftBy(TAB_M8T, shiftBy(TAB_M8T, a)))); }

uint sideW; // word of the chunk's side piece in out
bool rawChunk;
#define HEAD_WORD(q) ((rawChunk || (q) >= SIDE_CAP) ? outw[sideW + (q)] : sideSh[q])

void main() {
    uint t = gl_LocalInvocationID.x;
    uint C = pc.chunks;
    uint ks = 0u, kc = 0u;
    bool ready = false;
    for (uint i = gl_WorkGroupID.x; i < C; i += gl_NumWorkGroups.x) {
        uint c = C - 1u - i; // the last chunks first: pass 1 read them last, so some may still be cached
        if (work[2u * C + 1u + c] != FORMAT_TBE3) continue; // uniform: one chunk per workgroup
        if (!ready) { // a workgroup with none of its format's chunks leaves without loading tables
            loadTables();
            ks = xpow(32u * (WG - 1u - t));
            kc = consts[CONST_KC + t];
            ready = true;
        }
        bool last = c == C - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = meta[c];
        rawChunk = (info >> KIND_SHIFT) == CHUNK_RAW;
        uint w = (info >> TBE3_WINDOW_SHIFT) & TBE3_WINDOW_MASK, k = info & TBE3_COUNT_MASK;
        uint off = work[C + c];
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

        uint aP0 = 0u, aP1 = 0u, aP2 = 0u, aS = 0u;
        for (uint j = 0u; j < ITERS; j++) {
            uint u = j * WG + t;
            uvec4 x[4];
            loadUnit(c, u, m, x);
            uint pm = presentMask(u, m);
            uint q0 = 0u, q1 = 0u, q2 = 0u;
            uvec4 l0, l1;
            [[unroll]] for (uint i = 0u; i < 16u; i++) {
                uint wd = x[i / 4u][i & 3u];
                uint d0 = ((wd >> 7) & 0xFFu) - w, d1 = ((wd >> 23) & 0xFFu) - w;
                uint c0 = d0 < TBE3_WINDOW ? d0 + 1u : 0u, c1 = d1 < TBE3_WINDOW ? d1 + 1u : 0u;
                uint b = 2u * i;
                q0 |= ((c0 & 1u) << b) | ((c1 & 1u) << (b + 1u));
                q1 |= (((c0 >> 1) & 1u) << b) | (((c1 >> 1) & 1u) << (b + 1u));
                q2 |= ((c0 >> 2) << b) | ((c1 >> 2) << (b + 1u));
                uint lw = lows2(wd);
                if ((i & 1u) == 0u) {
                    if (i < 8u) l0[i / 2u] = lw; else l1[(i - 8u) / 2u] = lw;
                } else {
                    if (i < 8u) l0[i / 2u] |= lw << 16; else l1[(i - 8u) / 2u] |= lw << 16;
                }
            }
            q0 &= pm;
            q1 &= pm;
            q2 &= pm;
            uint z = ~(q0 | q1 | q2) & pm; // this unit's fallbacks
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
            }
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                if (8u * u + i < smWords) outw[sBase + 8u * u + i] = l0[i];
                if (8u * u + 4u + i < smWords) outw[sBase + 8u * u + 4u + i] = l1[i];
            }
            if (!rawChunk && k != 0u) {
                uint rank = scanStep(bitCount(z)); // uniform: the chunk decides
                for (; z != 0u; z &= z - 1u) {
                    uint b = findLSB(z), r = min(rank, k - 1u); // pass 1 counted exactly k; bounded all the same
                    uint e = ((x[b >> 3][(b >> 1) & 3u] >> ((b & 1u) != 0u ? 23u : 7u)) & 0xFFu) << (8u * (r & 3u));
                    if (r / 4u < SIDE_CAP) atomicOr(sideSh[r / 4u], e);
                    else atomicOr(outw[sideW + r / 4u], e);
                    rank++;
                }
            }
            if (pc.checksums != 0u) {
                if (u >= pw) { q0 = 0u; q1 = 0u; q2 = 0u; }
                if (8u * u >= smWords) { l0 = uvec4(0u); l1 = uvec4(0u); }
                aP0 = shiftBy(TAB_M4T, aP0) ^ q0;
                aP1 = shiftBy(TAB_M4T, aP1) ^ q1;
                aP2 = shiftBy(TAB_M4T, aP2) ^ q2;
                aS = stepSM(aS) ^ blockCRC(l0, l1);
            }
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
            // Linear CRC of plane piece || SM piece from the per-invocation registers (as tbe3_encode).
            uint x0 = wgXor(mulmod(aP0, kc)), x1 = wgXor(mulmod(aP1, kc)), x2 = wgXor(mulmod(aP2, kc));
            uint xs = wgXor(mulmod(aS, ks));
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
        }
        barrier(); // sideSh and carry are free for the next chunk
    }
}
