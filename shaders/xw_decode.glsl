// Exponent-window decode (docs/FORMAT.md §13): one workgroup per chunk (grid-stride), one pass. Each chunk
// checks its table entry against its neighbour's, verifies its CRC-32C, decodes its groups (an ordered prefix sum
// of zero codes numbers the escapes), and checks the canonical-form rules, with a histogram of the decoded
// exponents for the window rule. Problems become status bits and the lowest chunk per class. Every index derived
// from payload data is bounded before use.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"
#include "common.glsl"
#include "contracts.glsl" // the kernel's declarations (KERNEL_<NAME>: its .comp)
#include "xw_common.glsl"

#define DST_BASE pc.dstBase

// Where a chunk's pieces are: the streams of the whole body (g0 = the chunk's first group), or (PIECES, an auto
// body, docs/FORMAT.md §11) the chunk's piece, a one-chunk body at the offset its auto table entry gives.
uint gPB, gPN, gLB, gLN, gSB, gSL; // plane, byte stream and side section: first word and length (words; side: bytes)

shared uint hist[256];

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

uint msgWord(uint q) {
    if (q == 0u) return gInfo;
    if (q == 1u) return gOff;
    q -= 2u;
    if (q < gSideW) return sideWord(gOff / 4u + q);
    q -= gSideW;
    if (q < gPlaneW) return planeWord(gPlane0 + q);
    q -= gPlaneW;
    return lowWord(gLow0 + q);
}

void main() {
    uint t = gl_LocalInvocationID.x;
#if PIECES
    if (autoIdle(pc.self, 0u, pc.chunks)) return;
#endif
    uint rank = wgRank();
    initCRC();
    barrier();
    const uint emask = (1u << E) - 1u;
    const uint mmask = (1u << M) - 1u;
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
        if (pc.checksums != 0u) {
            gInfo = info;
            gOff = off;
            gSideW = size / 4u;
            gPlane0 = g0 * P;
            gPlaneW = last ? gPN - gPlane0 : GPC * P;
            gLow0 = g0 * LW;
            uint lowW = last ? gLN - gLow0 : GPC * LW;
            uint words = 2u + gSideW + gPlaneW + lowW;
            uint L = (words + WG - 1u) / WG;
            uint lo = min(rank * L, words), hi = min(lo + L, words);
            uint reg = 0u;
            for (uint q = lo; q < hi; q++) reg = crcWord(reg, msgWord(q));
            reg = shiftBytes(reg, 4u * (words - hi));
            uint crc = wgXor(reg) ^ shiftBytes(0xFFFFFFFFu, 4u * words) ^ 0xFFFFFFFFu;
            if (crc != stored) {
                if (t == 0u) report(STATUS_CHECKSUM, c);
                barrier();
                continue;
            }
        } else if (stored != 0u) {
            if (t == 0u) report(STATUS_NONCANONICAL, c);
            barrier();
            continue;
        }
        for (uint i = t; i < 256u; i += WG) hist[i] = 0u;
        barrier();
        uint bad = 0u;  // this invocation saw a non-canonical stream
        uint carry = 0u; // zero codes of earlier rounds
        for (uint it = 0u; it < ITERS; it++) {
            uint gi = it * WG + rank;
            bool live = gi < gm;
            uint n = live ? min(32u, m - gi * 32u) : 0u;
            uint valid = n == 32u ? 0xFFFFFFFFu : (1u << n) - 1u;
            uint pw[8], hp[8];
            for (uint p = 0u; p < 8u; p++) {
                pw[p] = 0u;
                hp[p] = 0u;
            }
            uint z = 0u; // lanes with code 0 (coded chunks)
            if (live) {
                for (uint p = 0u; p < P; p++) {
                    pw[p] = planeWord((g0 + gi) * P + p);
                    if ((pw[p] & ~valid) != 0u) bad = 1u;
                }
                if (raw) {
                    for (uint h = 0u; h < HP; h++) {
                        hp[h] = sideWord(off / 4u + gi * HP + h);
                        if ((hp[h] & ~valid) != 0u) bad = 1u;
                    }
                } else {
                    uint any = 0u;
                    for (uint p = 0u; p < W; p++) any |= pw[p];
                    z = ~any & valid;
                }
            }
            uint total;
            uint pre = wgExclusiveAdd(bitCount(z), total);
            if (live) {
                uint j = carry + pre; // chunk index of the group's next escape
                // Output word by output word, values in order (escapes are consumed in value order).
                for (uint q = 0u; q < GW; q++) {
                    uint ow = 0u;
                    for (uint u = 0u; u < VPW; u++) {
                        uint i = q * VPW + u;
                        if (i >= n) break;
                        uint sym = 0u;
                        for (uint p = 0u; p < P; p++) sym |= ((pw[p] >> i) & 1u) << p;
                        uint code = sym & WIN;
                        uint r = (sym >> W) << (8u * KB);
                        for (uint b = 0u; b < KB; b++) {
                            uint byteIdx = (g0 + gi) * 32u * KB + KB * i + b;
                            r |= ((lowWord(byteIdx / 4u) >> (8u * (byteIdx % 4u))) & 0xFFu) << (8u * b);
                        }
                        uint x;
                        if (raw) {
                            x = code;
                            for (uint h = 0u; h < HP; h++) x |= ((hp[h] >> i) & 1u) << (W + h);
                        } else if (code != 0u) {
                            x = base + code - 1u;
                        } else if (j >= k) {
                            bad = 1u; // more zero codes than escapes
                            x = 0u;
                        } else {
                            x = 0u;
                            uint w0 = off / 4u + (j / 32u) * E;
                            for (uint e = 0u; e < E; e++) x |= ((sideWord(w0 + e) >> (j % 32u)) & 1u) << e;
                            if (x - base < WIN) bad = 1u; // an escape that has a code
                            j++;
                        }
                        atomicAdd(hist[x & 255u], 1u);
                        uint v = ((r >> M) << SBIT) | (x << M) | (r & mmask);
                        ow |= v << (8u * SIZE * u);
                    }
                    uint wi = (c * N + gi * 32u) / VPW + q;
                    if (q * VPW < n && wi < pc.dstWords) dst[DST_BASE + wi] = ow;
                }
            }
            carry += total;
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
        bad = wgOr(bad);
        barrier();
        if (t == 0u) {
            uint s = 0u;
            for (uint e = 0u; e < WIN; e++) s += hist[e];
            uint best = s, bestBase = 0u;
            for (uint b = 1u; b <= MAXBASE; b++) {
                s += hist[b + WIN - 1u] - hist[b - 1u];
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
            if (bad != 0u) report(STATUS_NONCANONICAL, c);
        }
        barrier();
    }
}
