#version 450
// TBE-3 encode, pass 1 of 2: one workgroup per chunk (grid-stride). Finds the chunk's window (histogram of its
// exponents), writes its plane and SM pieces at their fixed offsets, its side piece (fallback bytes, or a raw chunk's
// remaining exponents) to a per-chunk scratch slot, its table info word, the linear CRC of its dense pieces (in the
// CRC word, finished by pass 2) and its side size into a per-64-chunk block sum, from which pass 2 (tbe3_place)
// finds the side offsets.
//
// Fallback bytes go to the slot in value order as the main loop codes each unit: the unit's first fallback rank
// comes from an ordered scan of the zero-code counts (scanStep), and its fallback exponents are ORed into the chunk's
// side words, staged in shared memory (the first SIDE_CAP words, copied to the slot at the end of the chunk) or, past
// that, straight into the slot, zeroed first.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_TBE3_ENCODE
#include "contracts.glsl"

#include "common.glsl"
#include "crc_tables.glsl"
#include "tbe3_common.glsl"

shared uint hist[256];
shared uint lut[256]; // exponent -> code (0: fallback)
shared uint best;
const uint SIDE_CAP = 1024u; // side words of a coded chunk staged in shared memory
shared uint sideS[SIDE_CAP];

// value v (chunk-local, < m) of segment chunk lc
uint valueAt(uint lc, uint v) {
    uint w = srcw[4u * pc.srcBase + (lc * N + v) / 2u];
    return (v & 1u) != 0u ? w >> 16 : w & 0xFFFFu;
}

// loadUnit reads the 32 values of unit u (zeros past m) as 16 words.
void loadUnit(uint lc, uint u, uint m, out uvec4 x[4]) {
    uint v0 = 32u * u;
    for (uint i = 0u; i < 4u; i++) x[i] = uvec4(0u);
    if (v0 + 32u <= m) {
        for (uint i = 0u; i < 4u; i++) x[i] = srcv[pc.srcBase + lc * (N / 8u) + 4u * u + i];
    } else if (v0 < m) {
        for (uint i = 0u; i < 16u; i++) {
            uint v = v0 + 2u * i;
            if (v < m) {
                uint w = srcw[4u * pc.srcBase + (lc * N + v) / 2u];
                if (v + 1u >= m) w &= 0xFFFFu; // values past the end are not part of the tensor
                x[i / 4u][i & 3u] = w;
            }
        }
    }
}

void main() {
    uint t = gl_LocalInvocationID.x;
    if (pc.checksums != 0u) loadTables();
    barrier(); // every invocation's share of the tables is in before any is read
    uint ks = xpow(32u * (WG - 1u - t));
    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        for (uint e = t; e < 256u; e += WG) hist[e] = 0u;
        if (t == 0u) best = 0u;
        barrier();
        // Histogram of the chunk's exponents.
        for (uint j = 0u; j < ITERS; j++) {
            uint u = j * WG + t;
            uvec4 x[4];
            loadUnit(lc, u, m, x);
            uint pm = presentMask(u, m);
            for (uint i = 0u; i < 16u; i++) {
                uint wd = x[i / 4u][i & 3u];
                if ((pm >> (2u * i) & 1u) != 0u) atomicAdd(hist[(wd >> 7) & 0xFFu], 1u);
                if ((pm >> (2u * i + 1u) & 1u) != 0u) atomicAdd(hist[(wd >> 23) & 0xFFu], 1u);
            }
        }
        barrier();
        // The window: most values covered, then lowest start.
        for (uint s = t; s <= TBE3_MAX_WINDOW_START; s += WG) {
            uint cov = 0u;
            for (uint i = 0u; i < TBE3_WINDOW; i++) cov += hist[s + i];
            atomicMax(best, (cov << 8) | (255u - s));
        }
        barrier();
        uint w = 255u - (best & 0xFFu);
        uint k = m - (best >> 8);
        bool raw = !(((k + 3u) & ~3u) < rawSide(m));
        for (uint e = t; e < 256u; e += WG) lut[e] = e >= w && e < w + TBE3_WINDOW ? e - w + 1u : 0u;
        uint slot = lc * SCRATCH;
        uint sideWords = raw ? 0u : (k + 3u) / 4u;
        for (uint q = t; q < min(sideWords, SIDE_CAP); q += WG) sideS[q] = 0u;
        for (uint q = SIDE_CAP + t; q < sideWords; q += WG) scratch[slot + q] = 0u;
        if (sideWords > SIDE_CAP) memoryBarrierBuffer();
        if (t == 0u) carry = 0u;
        barrier();

        uint pw = 2u * tiles(m);
        uint smWords = (m + 3u) / 4u;
        uint pBase = pc.planeBase + lc * PIECE_WORDS;
        uint sBase = pc.smBase + lc * (N / 4u); // in words
        // A caller's body may put the SM stream at any word: uvec4 stores only when it is 16-byte aligned.
        bool smVec = (pc.smBase & 3u) == 0u;
        uint aP0 = 0u, aP1 = 0u, aP2 = 0u, aS = 0u;
        for (uint j = 0u; j < ITERS; j++) {
            uint u = j * WG + t;
            uvec4 x[4];
            loadUnit(lc, u, m, x);
            uint pm = presentMask(u, m);
            uint q0 = 0u, q1 = 0u, q2 = 0u;
            uvec4 l0, l1;
            for (uint i = 0u; i < 16u; i++) {
                uint wd = x[i / 4u][i & 3u];
                uint c0 = lut[(wd >> 7) & 0xFFu], c1 = lut[(wd >> 23) & 0xFFu];
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
            uint zf = ~(q0 | q1 | q2) & pm;
            uint rank = 0u;
            if (!raw && k > 0u) rank = scanStep(uint(bitCount(zf))); // uniform: raw and k are the chunk's
            if (!raw && k > 0u) {
                for (uint zz = zf; zz != 0u; zz &= zz - 1u) {
                    uint b = uint(findLSB(zz)), i = b >> 1;
                    uvec4 h = i < 8u ? (i < 4u ? x[0] : x[1]) : (i < 12u ? x[2] : x[3]);
                    uint q = i & 3u;
                    uint wd = q < 2u ? (q == 0u ? h.x : h.y) : (q == 2u ? h.z : h.w);
                    uint e = (wd >> ((b & 1u) != 0u ? 23u : 7u)) & 0xFFu;
                    uint r = min(rank, k - 1u); // the window's count is exactly the chunk's zero codes; bounded
                    rank++;
                    if (r / 4u < SIDE_CAP) atomicOr(sideS[r / 4u], e << (8u * (r & 3u)));
                    else atomicOr(scratch[slot + r / 4u], e << (8u * (r & 3u)));
                }
            }
            if (raw) {
                // Raw: the plane piece holds exponent bytes (word q: values 4q..4q+3), zeros past m.
                q0 = 0u; q1 = 0u; q2 = 0u;
                for (uint p = 0u; p < 3u; p++) {
                    uint q = p * pw + u, wd = 0u;
                    for (uint b = 0u; b < 4u; b++) {
                        uint v = 4u * q + b;
                        if (v < m) wd |= ((valueAt(lc, v) >> 7) & 0xFFu) << (8u * b);
                    }
                    if (p == 0u) q0 = wd; else if (p == 1u) q1 = wd; else q2 = wd;
                }
            }
            if (u < pw) {
                planes[pBase + u] = q0;
                planes[pBase + pw + u] = q1;
                planes[pBase + 2u * pw + u] = q2;
            }
            if (smVec && 8u * u + 8u <= smWords) {
                smv[sBase / 4u + 2u * u] = l0;
                smv[sBase / 4u + 2u * u + 1u] = l1;
            } else {
                for (uint i = 0u; i < 4u; i++) {
                    if (8u * u + i < smWords) smw[sBase + 8u * u + i] = l0[i];
                    if (8u * u + 4u + i < smWords) smw[sBase + 8u * u + 4u + i] = l1[i];
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
        uint lin = 0u;
        if (pc.checksums != 0u) lin = denseCRC(aP0, aP1, aP2, aS, ks, m);
        // The side piece to the chunk's scratch slot, the words tbe3_place copies: a raw chunk's exponents of
        // values planePiece(m) .. m-1, or a coded chunk's k fallback exponents, zeros after either up to a word.
        if (raw) {
            uint pBytes = planePiece(m);
            for (uint q = t; q < rawSide(m) / 4u; q += WG) {
                uint wd = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint v = pBytes + 4u * q + b;
                    if (v < m) wd |= ((valueAt(lc, v) >> 7) & 0xFFu) << (8u * b);
                }
                scratch[slot + q] = wd;
            }
        } else {
            barrier(); // every unit's fallbacks are staged
            for (uint q = t; q < min(sideWords, SIDE_CAP); q += WG) scratch[slot + q] = sideS[q];
        }
        if (t == 0u) {
            uint info = raw ? (CHUNK_RAW << KIND_SHIFT) : ((w << TBE3_WINDOW_SHIFT) | k);
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = info;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = lin;
            atomicAdd(blockSum[c >> 6], raw ? rawSide(m) : ((k + 3u) & ~3u));
        }
        barrier();
    }
}
