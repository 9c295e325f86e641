#version 450
// huff decode (docs/FORMAT.md §14), one pass. A workgroup holds K = WG/16 chunks at a time (grid-stride over groups
// of K chunks), a team of 16 invocations per chunk, each invocation decoding two neighbouring lanes (2i, 2i+1) whole:
// values j and j+1 of a position share one output word, so the invocation writes it directly (no staging, no
// barriers while decoding, two independent bit readers for ILP). Per chunk, in parallel over the team: the table
// entry against its neighbour's and the piece header (lengths parsed 8 nibbles per word, Kraft sum from per-length
// counts), CRC-32C (strided words, Horner with a shift table, one XOR reduction), canonical order of the symbols
// (rank among equal lengths by nibble popcounts) and the 2048-entry decode table (16-bit entries, indexed by the
// next 11 lane bits reversed, so each code fills one contiguous range). Then the canonical rules; a raw chunk's
// coded-or-raw choice is checked by building its code, the workgroup's chunks one after another (rare).
// Status: flags, the lowest structurally corrupt chunk, the lowest chunk with a CRC mismatch, and the lowest chunk
// with a stream error, as chunk<<1 | (0 corrupt lane stream, 1 non-canonical). Every index derived from payload
// data is bounded before use.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "layout.glsl"
#include "common.glsl"
#define HUFF_CRC_STRIDE 16u
#define HUFF_ARENA dtab
#define HUFF_ARENA_ROWS (WG / 4u) // 4 rows per chunk in flight: its decode table
#include "huff_common.glsl"

layout(constant_id = 2) const uint BATCH = 8;  // loads issued together (low words, CRC words) before their use
layout(constant_id = 3) const uint PROF = 0;   // profiling only (wrong results): 1 no CRC, 2 no lane decoding,
                                               // 4 no output stores, 8 no end-of-chunk checks; 0 in real use

layout(std430, binding = 0) readonly buffer Lows { uint lows[]; };   // ≥ 1 word
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
layout(std430, binding = 2) readonly buffer Pieces { uint pieces[]; }; // ≥ 1 word
layout(std430, binding = 3) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 4) buffer Status { uint status[]; };

layout(push_constant) uniform PC {
    uint chunks;
    uint lastLen;
    uint checksums;
    uint pieceLen;  // bytes in the piece section
    uint lowWords;
    uint dstWords;  // words of the output (ceil(N/2))
    uint lowBase;   // words from each binding's start to its data (device-resident buffers at any offset)
    uint tableBase;
    uint pieceBase;
    uint dstBase;
} pc;

const uint TEAM = HUFF_CRC_STRIDE; // invocations per chunk, two lanes each
const uint K = WG / TEAM;    // chunks per workgroup
const uint TW = 1024u;       // decode table words: 2048 entries of 16 bits, symbol | length << 8

// dtab (declared by huff_common.glsl): chunk k's decode table in rows 4k .. 4k+3; word w of it is DTAB(w).
#define DTAB(w) dtab[TR + ((w) >> 8)][(w) & 255u]
shared uint sortS[K * 64u];     // present symbols in canonical order, 4 per word
shared uint lensP[K * 32u];     // code lengths: symbol minSym + 8w + u in nibble u of word w
shared uint laneNW[K * LANES];  // lane word counts
shared uint tBl[K * 12u];       // symbols per code length
shared uint tFlag[K];           // 1: a length above 11 (corrupt); 2: non-zero table padding (non-canonical)
shared uint tCrc[K];            // XOR of the team's CRC terms
shared uint tBad[K];            // 1: lane stream corrupt, 2: non-canonical
shared uint tRaw[K], tOff[K], tM[K]; // raw chunks awaiting the choice check
shared uint sAnyRaw;
shared uint rawLW[LANES];

uint pieceWord(uint i) {
    uint w = pc.pieceLen / 4u;
    return w == 0u ? 0u : pieces[pc.pieceBase + min(i, w - 1u)];
}

uint pieceByte(uint b) { return (pieceWord(b / 4u) >> (8u * (b % 4u))) & 255u; }

uint lowWord(uint i) { return pc.lowWords == 0u ? 0u : lows[pc.lowBase + min(i, pc.lowWords - 1u)]; }

uint tableWord(uint i) { return table[pc.tableBase + i]; }

// countEq is the number of nibbles of w equal to l (1 ≤ l ≤ 15).
uint countEq(uint w, uint l) {
    uint x = w ^ (l * 0x11111111u);
    return 8u - uint(bitCount((x | (x >> 1) | (x >> 2) | (x >> 3)) & 0x11111111u));
}

uint nibble(uint base, uint i) { return (lensP[base + i / 8u] >> (4u * (i % 8u))) & 15u; }

void report(uint cls, uint v) {
    atomicOr(status[0], cls == 1u ? STATUS_CORRUPT : (cls == 2u ? STATUS_CHECKSUM : STATUS_NONCANONICAL));
    atomicMin(status[cls], v);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint team = t / TEAM, i = t % TEAM;
    initStrideCRC();
    barrier();
    uint TR = team * 4u, SB = team * 64u, LB = team * 32u, NB = team * LANES, BB = team * 12u;
    for (uint base = gl_WorkGroupID.x * K; base < pc.chunks; base += gl_NumWorkGroups.x * K) {
        uint c = base + team;
        bool act = c < pc.chunks;
        if (i == 0u) {
            tFlag[team] = 0u;
            tCrc[team] = 0u;
            tBad[team] = 0u;
            tRaw[team] = 0u;
        }
        for (uint w = i; w < 64u; w += TEAM) sortS[SB + w] = 0u;
        if (t == 0u) sAnyRaw = 0u;
        barrier();
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint v0 = c * N;
        uint info = 0u, off = 0u, stored = 0u, expect = 0u;
        if (act) {
            info = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_INFO);
            off = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF); // words
            stored = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_CRC);
            if (c > 0u) {
                uint pinfo = tableWord((c - 1u) * CHUNK_ENTRY_WORDS + ENTRY_INFO);
                expect = tableWord((c - 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF)
                    + ((pinfo >> KIND_SHIFT) == CHUNK_RAW ? N / 4u : (pinfo & HUFF_PIECE_MASK));
            }
        }
        uint kind = info >> KIND_SHIFT;
        bool raw = kind == CHUNK_RAW;
        uint rawSize = (m + 3u) & ~3u;
        uint size = raw ? rawSize : 4u * (info & HUFF_PIECE_MASK);
        uint words = pc.pieceLen / 4u;
        // Structure (§14.4): the entry, its offset against the running sum (the previous entry's offset and size:
        // when that entry is itself wrong, the lower chunk is reported anyway), the piece inside the section, the
        // piece header; the section's end after the last chunk (no chunk: status[4]).
        bool corrupt = kind > CHUNK_RAW || (raw && (info & HUFF_PIECE_MASK) != 0u) || off != expect
            || off > words || size / 4u > words - off;
        uint h = act && !corrupt && !raw ? pieceWord(off) : 0u;
        uint lo = h & 255u, hi = (h >> 8) & 255u;
        uint n = hi >= lo ? hi - lo + 1u : 0u;
        uint tb = tableBytes(lo, hi);
        bool hdr = act && !corrupt && !raw;
        if (hdr && (size < 4u + 4u * HUFF_COUNTS_WORDS || lo > hi || tb + 4u * HUFF_COUNTS_WORDS > size)) {
            corrupt = true;
            hdr = false;
        }
        if (hdr) {
            // Nibble word nq holds bytes 2+4nq .. 5+4nq of the piece; word 32 only covers the last padding bytes.
            for (uint nq = i; nq <= 32u; nq += TEAM) {
                uint b0 = 2u + 4u * nq;
                uint v = (pieceWord(off + nq) >> 16) | (pieceWord(off + nq + 1u) << 16);
                uint nv = n > 8u * nq ? min(n - 8u * nq, 8u) : 0u;
                uint vm = nv == 8u ? ~0u : (1u << (4u * nv)) - 1u;
                uint nb = tb > b0 ? min(tb - b0, 4u) : 0u;
                uint bm = nb == 4u ? ~0u : (1u << (8u * nb)) - 1u;
                uint lv = v & vm;
                if (nq < 32u) lensP[LB + nq] = lv;
                if (((lv & (lv << 1)) & 0x88888888u) != 0u) atomicOr(tFlag[team], 1u);
                if ((v & ~vm & bm) != 0u) atomicOr(tFlag[team], 2u);
            }
            uint lw = pieceWord(off + tb / 4u + i);
            laneNW[NB + 2u * i] = lw & 0xFFFFu;
            laneNW[NB + 2u * i + 1u] = lw >> 16;
        }
        barrier();
        if (hdr && i < HUFF_MAX_LEN) {
            uint l = i + 1u, s = 0u;
            for (uint w = 0u; w < (n + 7u) / 8u; w++) s += countEq(lensP[LB + w], l);
            tBl[BB + l] = s;
        }
        barrier();
        uint at0 = 0u, nw0 = 0u, nw1 = 0u;
        if (hdr) {
            uint kraft = 0u, used = 0u;
            for (uint l = 1u; l <= HUFF_MAX_LEN; l++) {
                kraft += tBl[BB + l] << (HUFF_MAX_LEN - l);
                used += tBl[BB + l];
            }
            uint f0 = nibble(LB, 0u), fn = nibble(LB, n - 1u);
            uint tot = 0u;
            for (uint l = 0u; l < LANES; l++) {
                uint x = laneNW[NB + l];
                if (l < 2u * i) at0 += x;
                tot += x;
            }
            nw0 = laneNW[NB + 2u * i];
            nw1 = laneNW[NB + 2u * i + 1u];
            at0 += off + tb / 4u + HUFF_COUNTS_WORDS;
            if ((tFlag[team] & 1u) != 0u || f0 == 0u || fn == 0u || (used == 1u && f0 != 1u)
                || (used > 1u && kraft != (1u << HUFF_MAX_LEN)) || tb + 4u * HUFF_COUNTS_WORDS + 4u * tot != size) {
                corrupt = true;
            } else {
                // Canonical order: lengths ascending, then symbols; position = symbols of shorter lengths + rank.
                for (uint nq = i; nq < (n + 7u) / 8u; nq += TEAM) {
                    uint lw = lensP[LB + nq];
                    for (uint u = 0u; u < 8u; u++) {
                        uint l = (lw >> (4u * u)) & 15u;
                        if (l == 0u) continue;
                        uint pos = countEq(lw & ((1u << (4u * u)) - 1u), l);
                        for (uint w = 0u; w < nq; w++) pos += countEq(lensP[LB + w], l);
                        for (uint k = 1u; k < l; k++) pos += tBl[BB + k];
                        atomicOr(sortS[SB + pos / 4u], (lo + 8u * nq + u) << (8u * (pos % 4u)));
                    }
                }
            }
        }
        if (act && corrupt && i == 0u) report(1u, c);
        bool skip = !act || corrupt;
        if (!skip && last && off + size / 4u != words && i == 0u) {
            atomicOr(status[0], STATUS_CORRUPT);
            status[4] = 1u;
        }
        bool ncCRC = false;
        bool doCRC = !skip && pc.checksums != 0u && (PROF & 1u) == 0u;
        if (doCRC) {
            // Message words q = i + TEAM·k: info (with the initial register folded in), offset, piece, low piece.
            uint pw = size / 4u, low0 = v0 / 4u;
            uint lowW = last ? pc.lowWords - low0 : N / 4u;
            uint T = 2u + pw + lowW;
            uint u = 0u;
            for (uint q0 = i; q0 < T; q0 += TEAM * BATCH) {
                uint wv[BATCH];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                    uint q = q0 + b * TEAM;
                    if (q < 2u) wv[b] = q == 0u ? ~info : off;
                    else if (q < 2u + pw) wv[b] = pieceWord(off + q - 2u);
                    else wv[b] = q < T ? lowWord(low0 + q - 2u - pw) : 0u;
                }
                [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                    if (q0 + b * TEAM < T) u = shiftT(u) ^ wv[b];
                }
            }
            if (i < T) atomicXor(tCrc[team], strideTerm(u, i, T));
        } else {
            ncCRC = pc.checksums == 0u && stored != 0u;
        }
        barrier();
        if (doCRC && (tCrc[team] ^ 0xFFFFFFFFu) != stored) {
            if (i == 0u) report(2u, c);
            skip = true;
        }
        if (!skip && !raw) {
            // Decode table: code k of length l covers entries [a, a + 2^(11−l)) of the table indexed by the next 11
            // lane bits read first bit highest. Lengths ≤ 10 fill whole words; 11-bit codes come in pairs.
            uint used = 0u;
            for (uint l = 1u; l <= HUFF_MAX_LEN; l++) used += tBl[BB + l];
            uint a = 0u;
            for (uint k = 0u; k < used; k++) {
                uint s = (sortS[SB + k / 4u] >> (8u * (k % 4u))) & 255u;
                uint l = nibble(LB, s - lo);
                uint e = s | (l << 8);
                if (l < HUFF_MAX_LEN) {
                    uint w0 = a / 2u, w1 = w0 + (1u << (HUFF_MAX_LEN - l - 1u));
                    for (uint w = w0 + ((i + TEAM - (w0 % TEAM)) % TEAM); w < w1; w += TEAM) DTAB(w) = e | (e << 16);
                } else if ((a & 1u) == 0u && (a / 2u) % TEAM == i) {
                    uint k2 = min(k + 1u, 255u);
                    uint s2 = (sortS[SB + k2 / 4u] >> (8u * (k2 % 4u))) & 255u;
                    DTAB(a / 2u) = e | ((s2 | (HUFF_MAX_LEN << 8)) << 16);
                }
                a += 1u << (HUFF_MAX_LEN - l);
            }
            if (used == 1u) {
                for (uint w = TW / 2u + i; w < TW; w += TEAM) DTAB(w) = 0u; // the code 1... starts nothing
            }
        }
        if (!skip && raw && i == 0u) {
            tRaw[team] = 1u;
            tOff[team] = off;
            tM[team] = m;
            sAnyRaw = 1u;
        }
        barrier();
        uint bad = 0u;
        if (!skip) {
            uint l0 = 2u * i;
            uint c0 = laneValues(m, l0), c1 = laneValues(m, l0 + 1u);
            uint at1 = at0 + nw0;
            uint pos0 = 0u, pos1 = 0u, cw0 = 0u, cw1 = 0u;
            uint a0 = 0u, b0 = 0u, a1 = 0u, b1 = 0u; // current and next word of each lane
            if (!raw) {
                a0 = nw0 > 0u ? pieceWord(at0) : 0u;
                b0 = nw0 > 1u ? pieceWord(at0 + 1u) : 0u;
                a1 = nw1 > 0u ? pieceWord(at1) : 0u;
                b1 = nw1 > 1u ? pieceWord(at1 + 1u) : 0u;
            }
            for (uint pb = 0u; pb < c0; pb += BATCH) {
              // Loads first, BATCH of them in flight (the decode chain between them is short).
              uint lwv[BATCH], rwv[BATCH];
              [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                uint j = (pb + b) * LANES + l0;
                bool ok = pb + b < c0;
                lwv[b] = ok ? lowWord((v0 + j) / 4u) : 0u;
                rwv[b] = ok && raw ? pieceWord(off + j / 4u) : 0u;
              }
              [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                uint p = pb + b;
                if (p >= c0) break;
                uint j = p * LANES + l0;
                uint e0 = 0u, e1 = 0u;
                if ((PROF & 2u) == 0u) {
                    if (raw) {
                        uint x = rwv[b] >> (8u * (j % 4u));
                        e0 = x & 255u;
                        e1 = (x >> 8) & 255u;
                    } else {
                        uint sh = pos0 & 31u;
                        uint bits = sh == 0u ? a0 : (a0 >> sh) | (b0 << (32u - sh));
                        uint x = bitfieldReverse(bits) >> 21;
                        uint d = (DTAB(x / 2u) >> (16u * (x & 1u))) & 0xFFFFu;
                        uint len = d >> 8;
                        e0 = d & 255u;
                        if (len == 0u) bad |= 1u;
                        pos0 += len;
                        if ((pos0 >> 5) != cw0) {
                            cw0++;
                            a0 = b0;
                            b0 = cw0 + 1u < nw0 ? pieceWord(at0 + cw0 + 1u) : 0u;
                        }
                        if (p < c1) {
                            sh = pos1 & 31u;
                            bits = sh == 0u ? a1 : (a1 >> sh) | (b1 << (32u - sh));
                            x = bitfieldReverse(bits) >> 21;
                            d = (DTAB(x / 2u) >> (16u * (x & 1u))) & 0xFFFFu;
                            len = d >> 8;
                            e1 = d & 255u;
                            if (len == 0u) bad |= 1u;
                            pos1 += len;
                            if ((pos1 >> 5) != cw1) {
                                cw1++;
                                a1 = b1;
                                b1 = cw1 + 1u < nw1 ? pieceWord(at1 + cw1 + 1u) : 0u;
                            }
                        }
                    }
                }
                uint lw = lwv[b] >> (8u * (j % 4u));
                uint ov = ((lw & 0x80u) << 8) | (e0 << 7) | (lw & 0x7Fu);
                if (p < c1) ov |= ((lw & 0x8000u) | (e1 << 7) | ((lw >> 8) & 0x7Fu)) << 16;
                uint di = (v0 + j) / 2u;
                if (di < pc.dstWords && ((PROF & 4u) == 0u || ov == 0x12345678u)) dst[pc.dstBase + di] = ov;
              }
            }
            if (!raw && (PROF & 2u) == 0u) {
                // Lane ends: enough words, no extra word, zero bits after the last code.
                if (pos0 > 32u * nw0) bad |= 1u;
                else if ((pos0 + 31u) / 32u != nw0) bad |= 2u;
                else if ((pos0 & 31u) != 0u && (pieceWord(at0 + pos0 / 32u) >> (pos0 & 31u)) != 0u) bad |= 2u;
                if (pos1 > 32u * nw1) bad |= 1u;
                else if ((pos1 + 31u) / 32u != nw1) bad |= 2u;
                else if ((pos1 & 31u) != 0u && (pieceWord(at1 + pos1 / 32u) >> (pos1 & 31u)) != 0u) bad |= 2u;
            }
            if (i == 0u && (PROF & 8u) == 0u) {
                if (ncCRC) bad |= 2u;
                // Low-stream padding of the last chunk.
                if (last && m % 4u != 0u && (lowWord(v0 / 4u + m / 4u) >> (8u * (m % 4u))) != 0u) bad |= 2u;
                if (raw) {
                    if (m % 4u != 0u && (pieceWord(off + m / 4u) >> (8u * (m % 4u))) != 0u) bad |= 2u;
                } else {
                    if ((tFlag[team] & 2u) != 0u) bad |= 2u; // table padding
                    if (size >= rawSize) bad |= 2u;
                }
            }
        }
        if (sAnyRaw != 0u) {
            // A raw chunk is canonical only if vkzip's code would not make its piece smaller. The code is built in
            // the decode tables' rows: every chunk of the workgroup must be decoded first.
            barrier();
            for (uint r = 0u; r < K; r++) {
                if (tRaw[r] != 0u) {
                    uint ro = tOff[r], rm = tM[r];
                    for (uint x = t; x < 256u; x += WG) cnt[x] = 0u;
                    barrier();
                    for (uint j = t; j < rm; j += WG) atomicAdd(cnt[pieceByte(4u * ro + j)], 1u);
                    barrier();
                    buildLengthsWG();
                    barrier();
                    for (uint l = t; l < LANES; l += WG) {
                        uint lb = 0u;
                        for (uint p = 0u; p < laneValues(rm, l); p++) lb += lens[pieceByte(4u * ro + p * LANES + l)];
                        rawLW[l] = (lb + 31u) / 32u;
                    }
                    barrier();
                    if (t == 0u) {
                        uint sz = tableBytes(sLo, sHi) + 4u * HUFF_COUNTS_WORDS;
                        for (uint l = 0u; l < LANES; l++) sz += 4u * rawLW[l];
                        if (sz < ((rm + 3u) & ~3u)) atomicOr(tBad[r], 2u);
                    }
                    barrier();
                }
            }
        }
        if (bad != 0u) atomicOr(tBad[team], bad);
        barrier();
        uint tbad = tBad[team];
        if (!skip && i == 0u && tbad != 0u) report(3u, (c << 1) | ((tbad & 1u) != 0u ? 0u : 1u));
        barrier();
    }
}
