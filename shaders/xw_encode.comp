#version 450
// Exponent-window encode, pass 1 of 3 (docs/FORMAT.md §13): one workgroup per chunk (grid-stride). Each invocation
// owns whole groups of 32 values (by rank) and loads each group's value words once, as 16-byte vectors where the
// source is aligned. While counting the exponents in lane-private shared-memory columns (no two lanes of a
// subgroup share a bank or a counter), it writes the group's byte-stream words and transposes the group's top
// bytes into 8 bit planes with a few word-wide operations, which stay in registers (where they would not fit, the
// group is reloaded from cache later). The histogram picks the chunk's window and decides coded or raw; then the
// window's codes are computed on the exponent planes with bit-sliced arithmetic (32 values per operation) and the
// plane words go to their fixed offsets. An ordered prefix
// sum of the groups' escape counts places each escaped exponent's bits in the chunk's scratch slot (atomicOr, since
// neighbouring groups share words; the chunk zeroes the words it ORs into first, so scratch needs no clearing
// between runs). The info word and the dense pieces' linear CRC (summed in the same loop, xw_common.glsl) go to the
// table and the side size to a per-64-chunk sum for pass 2 (sz4_scan); pass 3 (xw_place) places side pieces and
// finishes the CRCs.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"
#include "common.glsl"
#define KERNEL_XW_ENCODE
#include "contracts.glsl"
#define XW_DENSE_CRC
#include "xw_common.glsl"

const uint NBINS = 1u << E;
const uint HCOLS = NBINS <= 64u ? 32u : 8u; // histogram columns: lane-private counters where they fit
shared uint hist[NBINS * HCOLS];
shared uint binSum[NBINS];
shared uint sBest;
shared uint sX[2]; // the workgroup's XOR of the dense sums
const uint STAGE = 1024u;
shared uint stage[STAGE]; // a round's escape words (zero between rounds)

// Between the histogram and the coding, each invocation keeps its groups' 8 tb planes in registers when they fit
// in 32 words (the groups are reloaded and transposed again otherwise); the byte stream is written while counting.
const bool KEEP = ITERS * 8u <= 32u;
// All of an invocation's value words are loaded before any is used when they fit in 32 words.
const bool LOAD_ALL = ITERS * GW <= 32u;

// lowWords sets lw[0..LW) to the byte-stream words of a group from its value words v.
void lowWords(uint v[32], out uint lw[24]) {
    [[unroll]] for (uint q = 0u; q < 24u; q++) lw[q] = 0u;
    if (KB == 1u) {
        [[unroll]] for (uint q = 0u; q < 8u; q++) {
            uint a = v[2u * q], b = v[2u * q + 1u];
            lw[q] = (a & 0xFFu) | ((a >> 8) & 0xFF00u) | ((b & 0xFFu) << 16) | ((b << 8) & 0xFF000000u);
        }
    } else if (KB == 3u) {
        [[unroll]] for (uint s = 0u; s < 8u; s++) {
            uint r[4];
            [[unroll]] for (uint j = 0u; j < 4u; j++) {
                uint x = v[4u * s + j];
                r[j] = (x & 0x7FFFFFu) | ((x >> 31) << 23);
            }
            lw[3u * s] = r[0] | (r[1] << 24);
            lw[3u * s + 1u] = (r[1] >> 8) | (r[2] << 16);
            lw[3u * s + 2u] = (r[2] >> 16) | (r[3] << 8);
        }
    }
}

// loadGroup sets v[0..GW) to the value words of tensor group ga, of which n values are the tensor's (the rest 0).
void loadGroup(uint ga, uint n, out uint v[32]) {
    [[unroll]] for (uint q = 0u; q < 32u; q++) v[q] = 0u;
    uint w0 = ga * GW;
    if (n == 32u && (pc.srcBase & 3u) == 0u) {
        [[unroll]] for (uint q = 0u; q < GW / 4u; q++) {
            uvec4 x = srcv[pc.srcBase / 4u + w0 / 4u + q];
            v[4u * q] = x.x;
            v[4u * q + 1u] = x.y;
            v[4u * q + 2u] = x.z;
            v[4u * q + 3u] = x.w;
        }
    } else {
        [[unroll]] for (uint q = 0u; q < GW; q++) {
            uint first = q * VPW; // first value of the word
            uint w = first < n && w0 + q < pc.srcWords ? src[pc.srcBase + w0 + q] : 0u;
            if (first < n && n - first < VPW) w &= (1u << (8u * SIZE * (n - first))) - 1u;
            v[q] = w;
        }
    }
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint rank = wgRank();
    uint col = t % HCOLS;
    for (uint i = t; i < NBINS * HCOLS; i += WG) hist[i] = 0u;
    for (uint i = t; i < STAGE; i += WG) stage[i] = 0u;
    if (pc.checksums != 0u) loadCRCTables();
    barrier();
    uint kcP = 0u, kcL = 0u; // this invocation's final multipliers of its dense sums
    if (pc.checksums != 0u) {
        kcP = kcPlanes(rank);
        if (KB != 0u) kcL = kcLows(rank);
    }
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint gm = (m + 31u) / 32u;
        uint vals[32]; // LOAD_ALL: the value words of every group of the invocation
        if (LOAD_ALL) {
            [[unroll]] for (uint it = 0u; it < ITERS; it++) {
                uint gi = it * WG + rank;
                uint v[32];
                loadGroup(c * GPC + gi, gi < gm ? min(32u, m - 32u * gi) : 0u, v);
                [[unroll]] for (uint q = 0u; q < GW; q++) vals[it * GW + q] = v[q];
            }
        }
        uint keep[32];        // KEEP: the tb planes of every group of the invocation
        uint aP = 0u, aL = 0u; // dense CRC sums
        [[unroll]] for (uint it = 0u; it < ITERS; it++) {
            uint gi = it * WG + rank;
            uint ga = c * GPC + gi;
            uint n = gi < gm ? min(32u, m - 32u * gi) : 0u;
            uint v[32];
            if (LOAD_ALL) {
                [[unroll]] for (uint q = 0u; q < 32u; q++) v[q] = q < GW ? vals[it * GW + q] : 0u;
            } else {
                loadGroup(ga, n, v);
            }
            [[unroll]] for (uint q = 0u; q < GW; q++) {
                [[unroll]] for (uint u = 0u; u < VPW; u++) {
                    if (q * VPW + u < n)
                        atomicAdd(hist[((v[q] >> (8u * SIZE * u + M)) & EMASK) * HCOLS + col], 1u);
                }
            }
            if (KB != 0u) {
                uint lw[24], ul = 0u;
                lowWords(v, lw);
                if (n != 0u) {
                    uint wi = ga * LW;
                    if ((pc.lowBase & 3u) == 0u && wi + LW <= pc.lowWords) {
                        [[unroll]] for (uint s = 0u; s < LW / 4u; s++)
                            lowsv[pc.lowBase / 4u + wi / 4u + s] = uvec4(lw[4u * s], lw[4u * s + 1u], lw[4u * s + 2u], lw[4u * s + 3u]);
                    } else {
                        [[unroll]] for (uint q = 0u; q < LW; q++)
                            if (wi + q < pc.lowWords) lows[pc.lowBase + wi + q] = lw[q];
                    }
                    if (pc.checksums != 0u) {
                        ul = lw[0];
                        [[unroll]] for (uint q = 1u; q < LW; q++) ul = shiftTab(TAB_W4, ul) ^ lw[q];
                    }
                }
                if (pc.checksums != 0u) aL = shiftTab(TAB_GL, aL) ^ ul;
            }
            if (KEEP) {
                uint tb[8];
                [[unroll]] for (uint q = 0u; q < 8u; q++) tb[q] = TB_WORD(v, q);
                bytesToPlanes(tb);
                [[unroll]] for (uint b = 0u; b < 8u; b++) keep[it * 8u + b] = tb[b];
            }
        }
        barrier();
        for (uint b = t; b < NBINS; b += WG) {
            uint s = 0u;
            for (uint l = 0u; l < HCOLS; l++) {
                uint i = b * HCOLS + ((l + b) % HCOLS); // rotated: the threads of a subgroup read distinct banks
                s += hist[i];
                hist[i] = 0u;
            }
            binSum[b] = s;
        }
        if (t == 0u) sBest = 0u;
        barrier();
        // The canonical window: most values inside, lowest base on ties (the larger key).
        for (uint b = t; b <= MAXBASE; b += WG) {
            uint s = 0u;
            for (uint e = 0u; e < WIN; e++) s += binSum[b + e];
            atomicMax(sBest, (s << 8) | (255u - b));
        }
        barrier();
        uint key = sBest;
        uint base = 255u - (key & 255u), k = m - (key >> 8);
        bool coded = codedSide(k) < rawSide(m);
        uint slot = c * HP * GPC; // scratch words of this chunk
        if (coded) {
            for (uint i = t; i < codedSide(k) / 4u; i += WG) scratch[slot + i] = 0u;
            memoryBarrierBuffer();
            barrier();
        }
        uint carry = 0u; // escapes of earlier rounds
        if (t < 2u) sX[t] = 0u;
        [[unroll]] for (uint it = 0u; it < ITERS; it++) {
            uint gi = it * WG + rank; // group within the chunk
            uint ga = c * GPC + gi;   // group within the tensor
            bool live = gi < gm;
            uint n = live ? min(32u, m - 32u * gi) : 0u;
            uint valid = n == 32u ? 0xFFFFFFFFu : (1u << n) - 1u;
            uint esc = 0u; // lanes whose value escapes
            uint X[8];     // exponent planes
            uint u = 0u; // the group's plane words folded for the CRC (0: no group)
            if (live) {
                uint tb[8];
                if (KEEP) {
                    [[unroll]] for (uint b = 0u; b < 8u; b++) tb[b] = keep[it * 8u + b];
                } else {
                    uint v[32];
                    loadGroup(ga, n, v);
                    [[unroll]] for (uint q = 0u; q < 8u; q++) tb[q] = TB_WORD(v, q);
                    bytesToPlanes(tb);
                }
                [[unroll]] for (uint e = 0u; e < 8u; e++) X[e] = e < E ? tb[XLO + e] : 0u;
                uint cp[4]; // code planes
                if (coded) {
                    // d = x - base, bit-sliced; in the window iff no borrow and d < 2^W - 1; code d + 1.
                    uint br = 0u, d[8];
                    [[unroll]] for (uint e = 0u; e < E; e++) {
                        uint xe = X[e];
                        if (((base >> e) & 1u) != 0u) {
                            d[e] = ~(xe ^ br);
                            br = ~xe | br;
                        } else {
                            d[e] = xe ^ br;
                            br = ~xe & br;
                        }
                    }
                    uint hiAny = 0u, loAll = 0xFFFFFFFFu;
                    [[unroll]] for (uint e = W; e < E; e++) hiAny |= d[e];
                    [[unroll]] for (uint e = 0u; e < W; e++) loAll &= d[e];
                    uint inWin = ~(br | hiAny | loAll) & valid;
                    esc = valid & ~inWin;
                    uint cy = 0xFFFFFFFFu;
                    [[unroll]] for (uint e = 0u; e < W; e++) {
                        cp[e] = (d[e] ^ cy) & inWin;
                        cy &= d[e];
                    }
                } else {
                    [[unroll]] for (uint e = 0u; e < W; e++) cp[e] = X[e];
                    [[unroll]] for (uint h = 0u; h < HP; h++) scratch[slot + gi * HP + h] = X[W + h];
                }
                uint pw[8];
                [[unroll]] for (uint p = 0u; p < P; p++) {
                    pw[p] = p < W ? cp[p] : tb[restPlane(p - W)];
                    planes[pc.planeBase + ga * P + p] = pw[p];
                }
                if (pc.checksums != 0u) {
                    u = pw[0];
                    [[unroll]] for (uint p = 1u; p < P; p++) u = shiftTab(TAB_W4, u) ^ pw[p];
                }
            }
            if (pc.checksums != 0u) aP = shiftTab(TAB_GP, aP) ^ u;
            uint total;
            uint pre = wgExclusiveAdd(bitCount(esc), total);
            // The round's escapes fill blocks carry/32 .. (carry+total-1)/32: staged in shared memory (OR by shared
            // atomics) when their words fit, else ORed into scratch by global atomics.
            uint words = total == 0u ? 0u : ((carry + total - 1u) / 32u - carry / 32u + 1u) * E;
            bool staged = words <= STAGE;
            if (esc != 0u) {
                // Escapes carry + pre, ... of the chunk: their bits go to one or two 32-escape blocks.
                uint s = carry + pre;
                uint acc0[8], acc1[8];
                [[unroll]] for (uint e = 0u; e < 8u; e++) {
                    acc0[e] = 0u;
                    acc1[e] = 0u;
                }
                uint pos = s % 32u;
                for (uint rest = esc; rest != 0u; rest &= rest - 1u) {
                    uint i = findLSB(rest);
                    [[unroll]] for (uint e = 0u; e < E; e++) {
                        uint bit = (X[e] >> i) & 1u;
                        if (pos < 32u) acc0[e] |= bit << pos; else acc1[e] |= bit << (pos - 32u);
                    }
                    pos++;
                }
                uint blk = s / 32u;
                if (staged) {
                    uint w = (blk - carry / 32u) * E;
                    [[unroll]] for (uint e = 0u; e < E; e++) {
                        if (acc0[e] != 0u) atomicOr(stage[w + e], acc0[e]);
                        if (acc1[e] != 0u) atomicOr(stage[w + E + e], acc1[e]);
                    }
                } else {
                    [[unroll]] for (uint e = 0u; e < E; e++) {
                        if (acc0[e] != 0u) atomicOr(scratch[slot + blk * E + e], acc0[e]);
                        if (acc1[e] != 0u) atomicOr(scratch[slot + (blk + 1u) * E + e], acc1[e]);
                    }
                }
            }
            if (staged) {
                // The round's escape words leave shared memory in one coalesced pass (its first block may hold
                // bits of the round before, already in scratch), and the stage is cleared for the next round.
                barrier();
                uint w0 = (carry / 32u) * E;
                for (uint i = t; i < words; i += WG) {
                    uint w = stage[i];
                    stage[i] = 0u;
                    if (i < E && carry % 32u != 0u) w |= scratch[slot + w0 + i];
                    scratch[slot + w0 + i] = w;
                }
            }
            memoryBarrierBuffer(); // the next round may OR into this round's last block
            carry += total;
        }
        if (pc.checksums != 0u) {
            uint x = subgroupXor(mulmod(aP, kcP));
            if (subgroupElect()) atomicXor(sX[0], x);
            if (KB != 0u) {
                x = subgroupXor(mulmod(aL, kcL));
                if (subgroupElect()) atomicXor(sX[1], x);
            }
        }
        barrier();
        if (t == 0u) {
            uint info = coded ? ((base << XW_BASE_SHIFT) | k) : (CHUNK_RAW << KIND_SHIFT);
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = info;
            // The dense pieces' linear CRC: the plane piece's shifted over the byte piece, that one's added.
            uint dense = 0u;
            if (pc.checksums != 0u) {
                dense = last ? mulmod(sX[0], pc.invPlaneLast) : sX[0];
                if (KB != 0u)
                    dense = mulmod(dense, last ? pc.shLowLast : pc.shLowFull)
                        ^ (last ? mulmod(sX[1], pc.invLowLast) : sX[1]);
            }
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = dense;
            atomicAdd(blockSum[c >> 6], coded ? codedSide(k) : rawSide(m));
        }
        barrier();
    }
}
