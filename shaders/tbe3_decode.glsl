// TBE-3 decode (docs/FORMAT.md §12): one workgroup per chunk (grid-stride), one pass. Each chunk checks its table
// entry against its neighbour's (the running-sum rule without a prefix sum), decodes its values (fallback bytes
// found by an ordered scan of the zero-code counts), checks the canonical-form rules (padding, fallback count and
// range, the window against a histogram of the decoded exponents, coded versus raw) and verifies its CRC-32C,
// reporting problems as status bits and the lowest chunk per class. Every index derived from payload data is
// bounded before use.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#include "contracts.glsl" // the kernel's declarations (KERNEL_<NAME>: its .comp)

// Where a chunk's pieces are: at offsets computed from the chunk index in a body of this format, or (PIECES, an
// auto body, docs/FORMAT.md §11) in the chunk's piece, a one-chunk body at the offset its auto table entry gives.
#if PIECES
uint gSideLen, gSideW, gTabW; // the chunk's piece: side section bytes, first side word, its entry
#define TAB_BASE gTabW
#define NEXT_OFF gSideLen
#define FIRST_CHUNK true
#define SIDE_LEN gSideLen
#define SIDE_BASE gSideW
#else
#define TAB_BASE pc.tableBase + c * CHUNK_ENTRY_WORDS
#define NEXT_OFF last ? pc.sideLen : table[pc.tableBase + (c + 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF]
#define FIRST_CHUNK c == 0u
#define SIDE_LEN pc.sideLen
#define SIDE_BASE pc.sideBase
#endif

#include "common.glsl"
#if PIECES
#include "auto_pieces.glsl"
#endif
#include "crc_tables.glsl"
#if PIECES
#include "auto_piece_crc.glsl"
#endif
#include "tbe3_common.glsl"

shared uint hist[256];  // exponents of the chunk's decoded values
shared uint best;       // (coverage << 8 | 255 - start) of the best window so far
shared uint pairE[64];  // a coded chunk's exponent bits of two values from their six code bits (0: fallback)

// sideWord reads side-section word i, clamped into the buffer.
uint sideWord(uint i) {
    uint words = SIDE_LEN / 4u;
    return side[SIDE_BASE + min(i, words == 0u ? 0u : words - 1u)];
}

uint sideByte(uint b) { return (sideWord(b / 4u) >> (8u * (b & 3u))) & 0xFFu; }

void report(uint bit, uint c) {
    uint cls = bit == STATUS_CORRUPT ? 1u : (bit == STATUS_CHECKSUM ? 2u : 3u);
    atomicOr(status[pc.statusBase], bit);
    atomicMin(status[pc.statusBase + cls], c);
}

uint chunkOff; // side offset of the current chunk in words, for sideAt
#define sideAt(q) sideWord(chunkOff + (q))

void main() {
    uint t = gl_LocalInvocationID.x;
#if PIECES
    if (autoIdle(FORMAT_TBE3, pc.segFirst, pc.segChunks)) return;
#endif
    if (pc.checksums != 0u) loadTables();
    barrier(); // the tables are read before a chunk's first barrier (auto pieces: the entry CRC)
    uint ks = xpow(32u * (WG - 1u - t));
    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint pBytes = planePiece(m);
        uint smWords = (m + 3u) / 4u;
#if PIECES
        uint aInfo, aOff, aNext;
        if (!autoPiece(FORMAT_TBE3, c, last, aInfo, aOff, aNext)) continue; // another kernel's chunk, or a bad entry
        uint fixedB = pBytes + 4u * smWords + 4u * CHUNK_ENTRY_WORDS; // the piece's planes, SM bytes and entry
        uint pieceB = aNext >= aOff ? 4u * (aNext - aOff) : 0u;
        if ((c == 0u && aOff != 0u) || aNext < aOff || aNext > pc.piecesLen / 4u || pieceB < fixedB
            || pieceB > fixedB + rawSide(m)) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            continue;
        }
        uint pBase = pc.pieceBase + aOff;
        uint smW = pBase + pBytes / 4u; // first SM word
        bool smAligned = (smW & 3u) == 0u;
        gTabW = smW + smWords;
        gSideW = gTabW + CHUNK_ENTRY_WORDS;
        gSideLen = pieceB - fixedB;
        autoPieceCRC(c, aInfo, aOff);
#else
        uint pBase = pc.planeBase + lc * PIECE_WORDS;
        uint smW = pc.smBase + lc * (N / 4u);     // first SM word
        bool smAligned = (pc.smBase & 3u) == 0u; // a caller's body may put the SM stream at any word
#endif
        uint info = table[TAB_BASE + ENTRY_INFO];
        uint off = table[TAB_BASE + ENTRY_SIDE_OFF];
        uint next = NEXT_OFF;
        uint kind = info >> KIND_SHIFT;
        bool raw = kind == CHUNK_RAW;
        uint w = (info >> TBE3_WINDOW_SHIFT) & TBE3_WINDOW_MASK;
        uint k = info & TBE3_COUNT_MASK;
        uint size = raw ? rawSide(m) : ((k + 3u) & ~3u);
        for (uint e = t; e < 256u; e += WG) hist[e] = 0u;
        if (t == 0u) carry = 0u;
        for (uint x = t; x < 64u; x += WG) {
            // Index bits: plane 0 of the two values, then plane 1, then plane 2 (pairCode).
            uint c0 = (x & 1u) | ((x >> 1) & 2u) | ((x >> 2) & 4u), c1 = ((x >> 1) & 1u) | ((x >> 2) & 2u) | ((x >> 3) & 4u);
            pairE[x] = (c0 != 0u ? (w + c0 - 1u) << 7 : 0u) | (c1 != 0u ? (w + c1 - 1u) << 23 : 0u);
        }
        barrier();
        // Structure (tbe3.md §5b.4). Neighbouring entries agreeing pairwise is the running-sum rule.
        bool corrupt = kind > CHUNK_RAW || (raw && (info & 0x00FFFFFFu) != 0u)
            || (!raw && (w > TBE3_MAX_WINDOW_START || k > m)) || (FIRST_CHUNK && off != 0u)
            || off > SIDE_LEN || size > SIDE_LEN - off || off + size != next;
        if (corrupt) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            barrier();
            continue;
        }
        if (!raw && !(((k + 3u) & ~3u) < rawSide(m)) && t == 0u) report(STATUS_NONCANONICAL, c);
        uint pw = 2u * tiles(m);   // words per plane in this chunk
        bool bad = false;
        uint aP0 = 0u, aP1 = 0u, aP2 = 0u, aS = 0u;
        uint cnt[7] = uint[7](0u, 0u, 0u, 0u, 0u, 0u, 0u);
        for (uint j = 0u; j < ITERS; j++) {
            uint u = j * WG + t;
            uint q0 = 0u, q1 = 0u, q2 = 0u;
            if (u < pw) {
                q0 = planes[pBase + u];
                q1 = planes[pBase + pw + u];
                q2 = planes[pBase + 2u * pw + u];
            }
            uvec4 l0 = uvec4(0u), l1 = uvec4(0u);
            if (8u * u + 8u <= smWords && smAligned) {
                l0 = smv[smW / 4u + 2u * u];
                l1 = smv[smW / 4u + 2u * u + 1u];
            } else {
                for (uint i = 0u; i < 4u; i++) {
                    if (8u * u + i < smWords) l0[i] = smw[smW + 8u * u + i];
                    if (8u * u + 4u + i < smWords) l1[i] = smw[smW + 8u * u + 4u + i];
                }
            }
            if (pc.checksums != 0u) {
                aP0 = shiftBy(TAB_M4T, aP0) ^ q0;
                aP1 = shiftBy(TAB_M4T, aP1) ^ q1;
                aP2 = shiftBy(TAB_M4T, aP2) ^ q2;
                aS = stepSM(aS) ^ blockCRC(l0, l1);
            }
            uint pm = presentMask(u, m);
            uint pres = bitCount(pm);
            // SM padding after the last value must be zero.
            if (pres < 32u) {
                for (uint i = pres; i < 32u; i++) {
                    uint wd = i < 16u ? l0[i / 4u] : l1[(i - 16u) / 4u];
                    if (((wd >> (8u * (i & 3u))) & 0xFFu) != 0u) bad = true;
                }
            }
            uint rank = 0u;
            uint z = 0u;
            if (!raw) {
                if (((q0 | q1 | q2) & ~pm) != 0u) bad = true; // plane bits at padding positions
                z = ~(q0 | q1 | q2) & pm;
                for (uint cd = 1u; cd <= 7u; cd++) cnt[cd - 1u] += bitCount(codeMask(cd, q0, q1, q2) & pm);
            }
            // Fallback ranks: an ordered scan of the zero-code counts (skipped, uniformly, when there are none).
            if (!raw && k > 0u) rank = scanStep(bitCount(z));
            if (pres == 0u) continue;
            uint f = bitCount(z);
            if (!raw && f != 0u && rank + f > k) bad = true;
            uint ov = lc * (N / 8u) + 4u * u; // uvec4 index of the unit's output
            if (!raw && pres == 32u && rank + f <= k && ((off + rank) & 3u) + f <= 12u) {
                // A whole coded unit whose fallbacks are declared: its fallback bytes lie in three side words,
                // loaded before the values are built. Each value pair's exponents come from pairE; the pairs
                // holding fallbacks are then rewritten with their fallback bytes.
                uint fb0 = 0u, fb1 = 0u, fb2 = 0u, fbAt = (off + rank) & 3u;
                if (f != 0u) {
                    uint fw = (off + rank) / 4u;
                    fb0 = sideWord(fw);
                    fb1 = sideWord(fw + 1u);
                    fb2 = sideWord(fw + 2u);
                }
                uvec4 o[4];
                [[unroll]] for (uint i = 0u; i < 16u; i++) {
                    uint wd = i < 8u ? l0[i / 2u] : l1[(i - 8u) / 2u];
                    o[i / 4u][i & 3u] = spread2((wd >> (16u * (i & 1u))) & 0xFFFFu) | pairE[pairCode(q0, q1, q2, 2u * i)];
                }
                [[unroll]] for (uint i = 0u; i < 4u; i++) dstv[pc.dstBase + ov + i] = o[i];
                uint zp = (z | (z >> 1)) & 0x55555555u; // bit 2i: pair i holds a fallback
                uint at = fbAt;                          // byte of the next fallback in fb0..fb2
                while (zp != 0u) {
                    uint b = findLSB(zp);
                    zp &= zp - 1u;
                    uint two = (z >> b) & 3u, i = b >> 1;
                    uvec4 h = i < 8u ? (i < 4u ? o[0] : o[1]) : (i < 12u ? o[2] : o[3]);
                    uint q = i & 3u;
                    uint ow = q < 2u ? (q == 0u ? h.x : h.y) : (q == 2u ? h.z : h.w);
                    for (uint hh = 0u; hh < 2u; hh++) {
                        if ((two & (1u << hh)) == 0u) continue;
                        uint fw = at < 8u ? (at < 4u ? fb0 : fb1) : fb2;
                        uint e = (fw >> (8u * (at & 3u))) & 0xFFu;
                        at++;
                        if (e >= w && e < w + TBE3_WINDOW) bad = true;
                        atomicAdd(hist[e], 1u);
                        ow |= e << (7u + 16u * hh);
                    }
                    dstw[4u * (pc.dstBase + ov) + i] = ow;
                }
                continue;
            }
            uvec4 o[4];
            for (uint i = 0u; i < 16u; i++) {
                uint wd = i < 8u ? l0[i / 2u] : l1[(i - 8u) / 2u];
                uint lo2 = (wd >> (16u * (i & 1u))) & 0xFFFFu; // SM bytes of values 2i, 2i+1
                uint ow = spread2(lo2);
                for (uint h = 0u; h < 2u; h++) {
                    uint b = 2u * i + h;
                    if (b >= pres) break;
                    uint e;
                    if (raw) {
                        uint v = 32u * u + b;
                        e = v < pBytes ? (planes[pBase + v / 4u] >> (8u * (v & 3u))) & 0xFFu
                                       : sideByte(off + v - pBytes);
                        atomicAdd(hist[e], 1u);
                    } else {
                        uint cd = ((q0 >> b) & 1u) | (((q1 >> b) & 1u) << 1) | (((q2 >> b) & 1u) << 2);
                        if (cd != 0u) {
                            e = w + cd - 1u;
                        } else {
                            e = sideByte(off + min(rank, k));
                            rank++;
                            if (e >= w && e < w + TBE3_WINDOW) bad = true;
                            atomicAdd(hist[e], 1u);
                        }
                    }
                    ow |= e << (7u + 16u * h);
                }
                o[i / 4u][i & 3u] = ow;
            }
            if (pres == 32u) {
                for (uint i = 0u; i < 4u; i++) dstv[pc.dstBase + ov + i] = o[i];
            } else {
                for (uint i = 0u; 2u * i < pres; i++) dstw[4u * (pc.dstBase + ov) + i] = o[i / 4u][i & 3u];
            }
        }
        if (raw) {
            // Padding of the raw pieces.
            for (uint v = m + t; v < pBytes; v += WG)
                if (((planes[pBase + v / 4u] >> (8u * (v & 3u))) & 0xFFu) != 0u) bad = true;
            uint sm = m > pBytes ? m - pBytes : 0u;
            for (uint b = sm + t; b < size; b += WG)
                if (sideByte(off + b) != 0u) bad = true;
        } else {
            for (uint cd = 1u; cd <= 7u; cd++) if (cnt[cd - 1u] != 0u) atomicAdd(hist[w + cd - 1u], cnt[cd - 1u]);
            if (t == 0u) {
                for (uint b = k; b < size; b++) if (sideByte(off + b) != 0u) bad = true;
            }
        }
        if (t == 0u) best = 0u;
        barrier(); // hist complete; carry final
        if (!raw && k > 0u && t == 0u && carry != k) bad = true;
        if (!raw && k == 0u) {
            // No scan ran: any zero code is a fallback the table does not declare.
            uint z = 0u;
            for (uint j = 0u; j < ITERS; j++) {
                uint u = j * WG + t;
                if (u < pw) z |= ~(planes[pBase + u] | planes[pBase + pw + u] | planes[pBase + 2u * pw + u]) & presentMask(u, m);
            }
            if (z != 0u) bad = true;
        }
        // The best window of the decoded values: most covered, then lowest start.
        for (uint s = t; s <= TBE3_MAX_WINDOW_START; s += WG) {
            uint cov = 0u;
            for (uint i = 0u; i < TBE3_WINDOW; i++) cov += hist[s + i];
            atomicMax(best, (cov << 8) | (255u - s));
        }
        barrier();
        if (t == 0u) {
            uint bs = 255u - (best & 0xFFu), bcov = best >> 8;
            if (raw ? (((m - bcov + 3u) & ~3u) < rawSide(m)) : (bs != w)) bad = true;
        }
        if (bad) report(STATUS_NONCANONICAL, c);

        uint crc = 0u;
        if (pc.checksums != 0u) {
            uint lin = denseCRC(aP0, aP1, aP2, aS, ks, m);
            chunkOff = off / 4u;
            HEADER_CRC(crc, info, off, size / 4u, pBytes + 4u * smWords, lin);
            if (t == 0u && crc != table[TAB_BASE + ENTRY_CRC]) report(STATUS_CHECKSUM, c);
        } else if (t == 0u && table[TAB_BASE + ENTRY_CRC] != 0u) {
            report(STATUS_NONCANONICAL, c);
        }
        barrier();
    }
}
