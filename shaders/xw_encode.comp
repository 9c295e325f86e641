#version 450
// Exponent-window encode, pass 1 of 3 (docs/FORMAT.md §13): one workgroup per chunk (grid-stride). A histogram
// of the chunk's exponents picks its window and decides coded or raw; then each invocation codes whole groups of 32
// values, writing their plane words and bytes at fixed offsets, and an ordered prefix sum of the groups' escape
// counts places each escaped exponent's bits in the chunk's scratch slot (atomicOr, since neighbouring groups share
// words; the chunk zeroes the words it ORs into first, so scratch needs no clearing between runs). The info word goes to the table and the side size to a per-64-chunk sum for
// pass 2 (sz4_scan); pass 3 (xw_place) places side pieces and computes CRCs.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"
#include "common.glsl"
#define KERNEL_XW_ENCODE
#include "contracts.glsl"
#include "xw_common.glsl"

shared uint hist[256];
shared uint sBase, sK, sCoded;

// value i (tensor index) from the source, 0 past its end
uint valueAt(uint i) {
    uint q = i / VPW;
    uint w = q < pc.srcWords ? src[pc.srcBase + q] : 0u;
    return (w >> (8u * SIZE * (i % VPW))) & (0xFFFFFFFFu >> (32u - 8u * SIZE));
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint rank = wgRank();
    const uint emask = (1u << E) - 1u;
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint v0 = c * N;
        for (uint i = t; i < 256u; i += WG) hist[i] = 0u;
        barrier();
        for (uint i = t; i < m; i += WG) atomicAdd(hist[(valueAt(v0 + i) >> M) & emask], 1u);
        barrier();
        if (t == 0u) {
            // The canonical window: most values inside, lowest base on ties.
            uint s = 0u;
            for (uint e = 0u; e < WIN; e++) s += hist[e];
            uint best = s, base = 0u;
            for (uint b = 1u; b <= MAXBASE; b++) {
                s += hist[b + WIN - 1u] - hist[b - 1u];
                if (s > best) {
                    best = s;
                    base = b;
                }
            }
            uint k = m - best;
            sBase = base;
            sK = k;
            sCoded = codedSide(k) < rawSide(m) ? 1u : 0u;
        }
        barrier();
        uint base = sBase, k = sK;
        bool coded = sCoded != 0u;
        uint gm = (m + 31u) / 32u;
        uint slot = c * HP * GPC; // scratch words of this chunk
        if (coded) {
            for (uint i = t; i < codedSide(k) / 4u; i += WG) scratch[slot + i] = 0u;
            memoryBarrierBuffer();
            barrier();
        }
        uint carry = 0u;          // escapes of earlier rounds
        for (uint it = 0u; it < ITERS; it++) {
            uint gi = it * WG + rank; // group within the chunk
            bool live = gi < gm;
            uint esc = 0u;            // lanes whose value escapes
            if (live) {
                uint pw[8];
                uint hp[8];
                for (uint p = 0u; p < 8u; p++) {
                    pw[p] = 0u;
                    hp[p] = 0u;
                }
                uint lw[24]; // byte-stream words of the group (LW ≤ 24)
                for (uint q = 0u; q < 24u; q++) lw[q] = 0u;
                for (uint i = 0u; i < 32u; i++) {
                    uint idx = gi * 32u + i;
                    if (idx >= m) break;
                    uint v = valueAt(v0 + idx);
                    uint x = (v >> M) & emask;
                    uint r = ((v >> SBIT) << M) | (v & ((1u << M) - 1u));
                    uint code;
                    if (!coded) {
                        code = x & WIN;
                        for (uint h = 0u; h < HP; h++) hp[h] |= ((x >> (W + h)) & 1u) << i;
                    } else if (x - base < WIN) {
                        code = x - base + 1u;
                    } else {
                        code = 0u;
                        esc |= 1u << i;
                    }
                    uint sym = code | ((r >> (8u * KB)) << W);
                    for (uint p = 0u; p < P; p++) pw[p] |= ((sym >> p) & 1u) << i;
                    for (uint b = 0u; b < KB; b++) {
                        uint byteIdx = KB * i + b;
                        lw[byteIdx / 4u] |= ((r >> (8u * b)) & 0xFFu) << (8u * (byteIdx % 4u));
                    }
                }
                uint gAbs = c * GPC + gi; // group within the tensor
                for (uint p = 0u; p < P; p++) planes[pc.planeBase + gAbs * P + p] = pw[p];
                for (uint q = 0u; q < LW; q++) {
                    uint wi = gAbs * LW + q;
                    if (wi < pc.lowWords) lows[pc.lowBase + wi] = lw[q];
                }
                if (!coded) {
                    for (uint h = 0u; h < HP; h++) scratch[slot + gi * HP + h] = hp[h];
                }
            }
            uint total;
            uint pre = wgExclusiveAdd(bitCount(esc), total);
            if (esc != 0u) {
                // Escapes carry + pre, ... of the chunk: their bits go to one or two 32-escape blocks.
                uint s = carry + pre;
                uint acc0[8], acc1[8];
                for (uint e = 0u; e < 8u; e++) {
                    acc0[e] = 0u;
                    acc1[e] = 0u;
                }
                uint pos = s % 32u;
                uint rest = esc;
                while (rest != 0u) {
                    uint i = findLSB(rest);
                    rest &= rest - 1u;
                    uint x = (valueAt(v0 + gi * 32u + i) >> M) & emask;
                    for (uint e = 0u; e < E; e++) {
                        uint bit = (x >> e) & 1u;
                        if (pos < 32u) acc0[e] |= bit << pos; else acc1[e] |= bit << (pos - 32u);
                    }
                    pos++;
                }
                uint blk = s / 32u;
                for (uint e = 0u; e < E; e++) {
                    if (acc0[e] != 0u) atomicOr(scratch[slot + blk * E + e], acc0[e]);
                    if (acc1[e] != 0u) atomicOr(scratch[slot + (blk + 1u) * E + e], acc1[e]);
                }
            }
            carry += total;
        }
        if (t == 0u) {
            uint info = coded ? ((base << XW_BASE_SHIFT) | k) : (CHUNK_RAW << KIND_SHIFT);
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = info;
            atomicAdd(blockSum[c >> 6], coded ? codedSide(k) : rawSide(m));
        }
        barrier();
    }
}
