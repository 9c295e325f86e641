// Exponent-window decode (docs/FORMAT.md §13): one workgroup per chunk (grid-stride), one pass over the chunk.
// Each chunk checks its table entry against its neighbour's, then decodes its groups of 32 values, one group per
// invocation at a time: the group's plane words turn into exponent planes with bit-sliced arithmetic (32 values per
// operation; an ordered prefix sum of zero codes numbers the escapes, filled in one by one), the planes are
// transposed back into bytes with a few word-wide operations, and the output goes out as 16-byte vectors where it
// is aligned. The dense pieces' CRC-32C is summed in the same loop (xw_common.glsl), the header and side piece's
// after it; the canonical-form rules use a histogram of the decoded exponents (coded chunks: code counts by
// popcount, escapes one by one). Problems become status bits and the lowest chunk per class. Every index derived
// from payload data is bounded before use.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require

#include "layout.glsl"
#include "common.glsl"
#include "contracts.glsl" // the kernel's declarations (KERNEL_<NAME>: its .comp)
#define XW_DENSE_CRC
#define XW_HS_CRC
#include "xw_common.glsl"

#define DST_BASE pc.dstBase

// Where a chunk's pieces are: the streams of the whole body (g0 = the chunk's first group), or (PIECES, an auto
// body, docs/FORMAT.md §11) the chunk's piece, a one-chunk body at the offset its auto table entry gives.
uint gPB, gPN, gLB, gLN, gSB, gSL; // plane, byte stream and side section: first word and length (words; side: bytes)

const uint NBINS = 1u << E;
const uint HCOLS = NBINS <= 64u ? 32u : 8u; // histogram columns: lane-private counters where they fit
shared uint hist[NBINS * HCOLS];
shared uint binSum[NBINS];
shared uint zpre[GPC]; // coded chunks: zero codes before each group of the chunk

#if PIECES
#include "auto_pieces.glsl"
#endif

void report(uint bit, uint c) {
    uint cls = bit == STATUS_CORRUPT ? 1u : (bit == STATUS_CHECKSUM ? 2u : 3u);
    atomicOr(status[0], bit);
    atomicMin(status[cls], c);
}

// sideWord reads side-section word i, clamped into the buffer.
uint sideWord(uint i) {
    uint words = gSL / 4u;
    return side[gSB + (words == 0u ? 0u : min(i, words - 1u))];
}

uint planeWord(uint i) { return planes[gPB + min(i, gPN - 1u)]; }
uint lowWord(uint i) { return gLN == 0u ? 0u : lows[gLB + min(i, gLN - 1u)]; }

uint gInfo, gOff, gSideW, gPlane0, gPlaneW, gLow0;

// loadLows sets lw[0..LW) to the byte-stream words of group ga (stream-relative), as vectors where they are
// aligned and whole; words past the stream (or the piece) are 0, as the CRC sums take them.
void loadLows(uint ga, uint n, out uint lw[24]) {
    uint w0 = ga * LW;
    if ((gLB & 3u) == 0u && w0 + LW <= gLN) {
        [[unroll]] for (uint q = 0u; q < LW / 4u; q++) {
            uvec4 x = lowsv[gLB / 4u + w0 / 4u + q];
            lw[4u * q] = x.x;
            lw[4u * q + 1u] = x.y;
            lw[4u * q + 2u] = x.z;
            lw[4u * q + 3u] = x.w;
        }
        return;
    }
    [[unroll]] for (uint q = 0u; q < LW; q++) lw[q] = w0 + q < gLN ? lowWord(w0 + q) : 0u;
}

// msgWord is word q of the chunk's checksummed header and side piece: info, offset, side words.
uint msgWord(uint q) {
    if (q == 0u) return gInfo;
    if (q == 1u) return gOff;
    return sideWord(gOff / 4u + q - 2u);
}

shared uint sX[2]; // the workgroup's XOR of the dense sums

void main() {
    uint t = gl_LocalInvocationID.x;
#if PIECES
    if (autoIdle(pc.self, 0u, pc.chunks)) return;
#endif
    uint rank = wgRank();
    uint col = t % HCOLS;
    initCRC();
    if (pc.checksums != 0u) {
        loadCRCTables();
        loadHTable();
    }
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
#if PIECES
        uint aInfo, aOff, aNext;
        if (!autoPiece(pc.self, c, last, aInfo, aOff, aNext)) continue; // another kernel's chunk, or a bad entry
        gPN = P * gm;
        gLN = (KB * m + 3u) / 4u;
        uint fixedB = 4u * (gPN + gLN + CHUNK_ENTRY_WORDS);
        uint pieceB = aNext >= aOff ? 4u * (aNext - aOff) : 0u;
        if ((c == 0u && aOff != 0u) || aNext < aOff || aNext > pc.piecesLen / 4u || pieceB < fixedB
            || pieceB > fixedB + rawSide(m)) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            continue;
        }
        gPB = pc.pieceBase + aOff;
        gLB = gPB + gPN;
        uint tab = gLB + gLN;
        gSB = tab + CHUNK_ENTRY_WORDS;
        gSL = pieceB - fixedB;
        if (t == 0u) {
            uint aStored = table[pc.autoBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC];
            if (pc.checksums != 0u) {
                uint reg = 0xFFFFFFFFu;
                reg = crcWord(reg, aInfo);
                reg = crcWord(reg, aOff);
                if ((reg ^ 0xFFFFFFFFu) != aStored) report(STATUS_CHECKSUM, c);
            } else if (aStored != 0u) {
                report(STATUS_NONCANONICAL, c);
            }
        }
        uint g0 = 0u; // groups count from the piece's start
        const bool firstChunk = true;
        uint sideLen = gSL;
#else
        uint tab = pc.tableBase + c * CHUNK_ENTRY_WORDS;
        gPB = pc.planeBase;
        gPN = pc.planeWords;
        gLB = pc.lowBase;
        gLN = pc.lowWords;
        gSB = pc.sideBase;
        gSL = pc.sideLen;
        uint g0 = c * GPC; // first group of the chunk in the tensor
        bool firstChunk = c == 0u;
        uint sideLen = pc.sideLen;
#endif
        uint info = table[tab + ENTRY_INFO];
        uint off = table[tab + ENTRY_SIDE_OFF];
        uint stored = table[tab + ENTRY_CRC];
#if PIECES
        uint next = sideLen;
#else
        uint next = last ? pc.sideLen : table[pc.tableBase + (c + 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF];
#endif
        uint kind = info >> KIND_SHIFT;
        uint base = (info >> XW_BASE_SHIFT) & XW_BASE_MASK;
        uint k = info & XW_COUNT_MASK;
        bool raw = kind == CHUNK_RAW;
        uint size = raw ? rawSide(m) : codedSide(k);
        // Structure (docs/FORMAT.md §13.2.2); neighbouring entries agreeing pairwise is the running-sum rule.
        bool corrupt = kind > CHUNK_RAW || (raw && (info & ((1u << KIND_SHIFT) - 1u)) != 0u)
            || (!raw && (k > m || base > MAXBASE)) || (firstChunk && off != 0u) || off > sideLen
            || size > sideLen - off || off + size != next || off % 4u != 0u;
        if (corrupt) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            barrier();
            continue;
        }
        if (pc.checksums == 0u && stored != 0u) {
            if (t == 0u) report(STATUS_NONCANONICAL, c);
            barrier();
            continue;
        }
        if (t < 2u) sX[t] = 0u;
        for (uint i = t; i < NBINS * HCOLS; i += WG) hist[i] = 0u;
        barrier();
        uint bad = 0u;  // this invocation saw a non-canonical stream
        uint carry = 0u; // zero codes of the chunk (coded chunks)
        if (!raw) {
            // Escapes are numbered before the decoding loop, so that it runs without barriers: each group's zero
            // codes counted from its code planes (read again, from cache, by the loop), then one ordered scan.
            for (uint it = 0u; it < ITERS; it++) {
                uint gi = it * WG + rank;
                uint z = 0u;
                if (gi < gm) {
                    uint n = min(32u, m - gi * 32u);
                    uint any = 0u;
                    [[unroll]] for (uint p = 0u; p < W; p++) any |= planeWord((g0 + gi) * P + p);
                    z = ~any & (n == 32u ? 0xFFFFFFFFu : (1u << n) - 1u);
                }
                zpre[gi] = bitCount(z);
            }
            barrier();
            // Exclusive prefix over the chunk's groups: each invocation its ITERS consecutive groups, in rank order.
            uint local = 0u;
            for (uint i = 0u; i < ITERS; i++) local += zpre[rank * ITERS + i];
            uint before = wgExclusiveAdd(local, carry);
            for (uint i = 0u; i < ITERS; i++) {
                uint v = zpre[rank * ITERS + i];
                zpre[rank * ITERS + i] = before;
                before += v;
            }
            barrier();
        }
        uint aP = 0u, aL = 0u; // dense CRC sums
        uint cnt[16];          // coded chunks: values per code
        [[unroll]] for (uint q = 0u; q < 16u; q++) cnt[q] = 0u;
        for (uint it = 0u; it < ITERS; it++) {
            uint gi = it * WG + rank;
            uint ga = g0 + gi; // group within the streams
            bool live = gi < gm;
            uint n = live ? min(32u, m - gi * 32u) : 0u;
            uint valid = n == 32u ? 0xFFFFFFFFu : (1u << n) - 1u;
            uint pw[8], hp[8];
            [[unroll]] for (uint p = 0u; p < 8u; p++) {
                pw[p] = 0u;
                hp[p] = 0u;
            }
            uint z = 0u; // lanes with code 0 (coded chunks)
            if (live) {
                [[unroll]] for (uint p = 0u; p < P; p++) {
                    pw[p] = planeWord(ga * P + p);
                    if ((pw[p] & ~valid) != 0u) bad = 1u;
                }
                if (raw) {
                    [[unroll]] for (uint h = 0u; h < HP; h++) {
                        hp[h] = sideWord(off / 4u + gi * HP + h);
                        if ((hp[h] & ~valid) != 0u) bad = 1u;
                    }
                } else {
                    uint any = 0u;
                    [[unroll]] for (uint p = 0u; p < W; p++) any |= pw[p];
                    z = ~any & valid;
                }
            }
            uint lw[24];
            [[unroll]] for (uint q = 0u; q < 24u; q++) lw[q] = 0u;
            if (live && KB != 0u) loadLows(ga, n, lw);
            if (pc.checksums != 0u) {
                uint u = pw[0];
                [[unroll]] for (uint p = 1u; p < P; p++) u = shiftTab(TAB_W4, u) ^ pw[p];
                aP = shiftTab(TAB_GP, aP) ^ u;
                if (KB != 0u) {
                    u = lw[0];
                    [[unroll]] for (uint q = 1u; q < LW; q++) u = shiftTab(TAB_W4, u) ^ lw[q];
                    aL = shiftTab(TAB_GL, aL) ^ u;
                }
            }
            if (live) {
                // Exponent planes, bit-sliced: raw, the code planes under the high planes; coded, x = base + code - 1
                // for every lane with a code, escapes filled in one by one (in value order).
                uint X[8];
                if (raw) {
                    [[unroll]] for (uint e = 0u; e < 8u; e++) X[e] = e < W ? pw[e] : (e < E ? hp[(e - W) & 7u] : 0u);
                } else {
                    uint dd[4], bw = 0xFFFFFFFFu;
                    [[unroll]] for (uint e = 0u; e < W; e++) {
                        dd[e] = pw[e] ^ bw;
                        bw &= ~pw[e];
                    }
                    [[unroll]] for (uint cc = 1u; cc <= WIN; cc++) {
                        uint match = valid;
                        [[unroll]] for (uint e = 0u; e < W; e++) match &= ((cc >> e) & 1u) != 0u ? pw[e] : ~pw[e];
                        cnt[cc] += bitCount(match);
                    }
                    uint cy = 0u, nz = ~z & valid;
                    [[unroll]] for (uint e = 0u; e < 8u; e++) {
                        uint de = e < W ? dd[e] : 0u;
                        if (e >= E) {
                            X[e] = 0u;
                        } else if (((base >> e) & 1u) != 0u) {
                            X[e] = ~(de ^ cy) & nz;
                            cy = de | cy;
                        } else {
                            X[e] = (de ^ cy) & nz;
                            cy = de & cy;
                        }
                    }
                    uint j = zpre[gi]; // chunk index of the group's next escape
                    for (uint rest = z; rest != 0u; rest &= rest - 1u) {
                        uint i = findLSB(rest);
                        if (j >= k) {
                            bad = 1u; // more zero codes than escapes
                            break;
                        }
                        uint x = 0u;
                        uint w0 = off / 4u + (j / 32u) * E;
                        [[unroll]] for (uint e = 0u; e < E; e++) x |= ((sideWord(w0 + e) >> (j % 32u)) & 1u) << e;
                        if (x - base < WIN) bad = 1u; // an escape that has a code
                        atomicAdd(hist[x * HCOLS + col], 1u);
                        [[unroll]] for (uint e = 0u; e < E; e++) X[e] |= ((x >> e) & 1u) << i;
                        j++;
                    }
                }
                uint tb[8];
                [[unroll]] for (uint b = 0u; b < 8u; b++) tb[b] = 0u;
                [[unroll]] for (uint e = 0u; e < E; e++) tb[XLO + e] = X[e];
                if (SIZE != 4u) {
                    [[unroll]] for (uint q = 0u; q < KP; q++) tb[restPlane(q)] = pw[W + q];
                }
                planesToBytes(tb);
                if (raw) {
                    [[unroll]] for (uint q = 0u; q < 8u; q++) {
                        [[unroll]] for (uint u = 0u; u < 4u; u++) {
                            if (4u * q + u < n) atomicAdd(hist[((tb[q] >> (8u * u + XLO)) & EMASK) * HCOLS + col], 1u);
                        }
                    }
                }
                uint o[32];
                [[unroll]] for (uint q = 0u; q < 32u; q++) o[q] = 0u;
                if (SIZE == 1u) {
                    [[unroll]] for (uint q = 0u; q < 8u; q++) o[q] = tb[q];
                } else if (SIZE == 2u) {
                    [[unroll]] for (uint q = 0u; q < 8u; q++) {
                        uint l = lw[q], h = tb[q];
                        o[2u * q] = (l & 0xFFu) | ((h & 0xFFu) << 8) | ((l & 0xFF00u) << 8) | ((h & 0xFF00u) << 16);
                        o[2u * q + 1u] = ((l >> 16) & 0xFFu) | ((h >> 8) & 0xFF00u) | ((l >> 8) & 0xFF0000u)
                            | (h & 0xFF000000u);
                    }
                } else {
                    [[unroll]] for (uint s = 0u; s < 8u; s++) {
                        uint r[4];
                        r[0] = lw[3u * s] & 0xFFFFFFu;
                        r[1] = (lw[3u * s] >> 24) | ((lw[3u * s + 1u] & 0xFFFFu) << 8);
                        r[2] = (lw[3u * s + 1u] >> 16) | ((lw[3u * s + 2u] & 0xFFu) << 16);
                        r[3] = lw[3u * s + 2u] >> 8;
                        [[unroll]] for (uint j = 0u; j < 4u; j++)
                            o[4u * s + j] = ((r[j] >> 23) << 31) | (((tb[s] >> (8u * j)) & 0xFFu) << 23) | (r[j] & 0x7FFFFFu);
                    }
                }
                uint wi = (c * N + gi * 32u) / VPW; // first output word of the group
                if (n == 32u && (DST_BASE & 3u) == 0u) {
                    [[unroll]] for (uint q = 0u; q < GW / 4u; q++)
                        dstv[DST_BASE / 4u + wi / 4u + q] = uvec4(o[4u * q], o[4u * q + 1u], o[4u * q + 2u], o[4u * q + 3u]);
                } else {
                    [[unroll]] for (uint q = 0u; q < GW; q++)
                        if (q * VPW < n && wi + q < pc.dstWords) dst[DST_BASE + wi + q] = o[q];
                }
            }
        }
        if (!raw && carry != k) bad = 1u;
        // Escape-plane bits past the last escape.
        if (!raw && k % 32u != 0u && t < E && (sideWord(off / 4u + (k / 32u) * E + t) >> (k % 32u)) != 0u) bad = 1u;
        // Byte-stream padding of the last chunk.
        if (last && KB != 0u) {
            uint from = KB * m; // chunk-relative byte where padding starts
            uint lowW = gLN - g0 * LW;
            for (uint q = from / 4u + t; q < lowW; q += WG) {
                uint w = lowWord(g0 * LW + q);
                if (q == from / 4u && from % 4u != 0u) w >>= 8u * (from % 4u);
                if (w != 0u) bad = 1u;
            }
        }
        if (!raw) {
            [[unroll]] for (uint cc = 1u; cc <= WIN; cc++)
                if (cnt[cc] != 0u) atomicAdd(hist[(base + cc - 1u) * HCOLS + col], cnt[cc]);
        }
        uint words = 2u + size / 4u; // header and side piece
        if (pc.checksums != 0u) {
            uint x = subgroupXor(mulmod(aP, kcP));
            if (subgroupElect()) atomicXor(sX[0], x);
            if (KB != 0u) {
                x = subgroupXor(mulmod(aL, kcL));
                if (subgroupElect()) atomicXor(sX[1], x);
            }
        }
        bad = wgOr(bad);
        uint rHS = 0u; // the header and side piece's CRC register, started at ~0
        if (pc.checksums != 0u) {
            gInfo = info;
            gOff = off;
            rHS = hsCRC(words);
        }
        for (uint b = t; b < NBINS; b += WG) {
            uint s = 0u;
            for (uint l = 0u; l < HCOLS; l++) s += hist[b * HCOLS + ((l + b) % HCOLS)];
            binSum[b] = s;
        }
        barrier();
        if (t == 0u) {
            uint s = 0u;
            for (uint e = 0u; e < WIN; e++) s += binSum[e];
            uint best = s, bestBase = 0u;
            for (uint b = 1u; b <= MAXBASE; b++) {
                s += binSum[b + WIN - 1u] - binSum[b - 1u];
                if (s > best) {
                    best = s;
                    bestBase = b;
                }
            }
            if (raw) {
                if (codedSide(m - best) < rawSide(m)) bad = 1u;
            } else if (codedSide(k) >= rawSide(m) || bestBase != base) {
                bad = 1u;
            }
            bool crcBad = false;
            if (pc.checksums != 0u) {
                uint rP = last ? mulmod(sX[0], pc.invPlaneLast) : sX[0];
                uint dense = rP;
                if (KB != 0u) {
                    uint rL = last ? mulmod(sX[1], pc.invLowLast) : sX[1];
                    dense = mulmod(rP, last ? pc.shLowLast : pc.shLowFull) ^ rL;
                }
                uint crc = ~(mulmod(rHS, last ? pc.shDenseLast : pc.shDenseFull) ^ dense);
                crcBad = crc != stored;
            }
            if (crcBad) {
                report(STATUS_CHECKSUM, c);
            } else if (bad != 0u) {
                report(STATUS_NONCANONICAL, c);
            }
        }
        barrier();
    }
}
