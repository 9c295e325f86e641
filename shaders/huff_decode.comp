#version 450
// huff decode (docs/FORMAT.md §14): one workgroup per chunk (grid-stride), one pass. The chunk checks its table
// entry against its neighbour's and its piece header (code table, lane counts), verifies its CRC-32C, builds the
// 2048-entry lookup table of its code in shared memory, and decodes: invocation l < 32 decodes lane l, BATCH
// positions at a time into shared memory, then the whole workgroup writes those 32·BATCH values as consecutive
// words. Then the canonical rules (lane padding and minimal lengths, table padding, coded-or-raw choice, for a raw
// chunk by building the code its values would get). Status: flags, the lowest structurally corrupt chunk, the
// lowest chunk with a CRC mismatch, and the lowest chunk with a stream error, as chunk<<1 | (0 corrupt lane
// stream, 1 non-canonical). Every index derived from payload data is bounded before use.
#extension GL_GOOGLE_include_directive : require

#include "layout.glsl"
#include "common.glsl"
#include "huff_common.glsl"

layout(constant_id = 2) const uint BATCH = 16; // lane positions decoded between two output rounds
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

shared uint dtab[2048];
shared uint she[BATCH * LANES];
shared uint laneAt[LANES], laneNW[LANES], laneBitsS[LANES];
shared uint sBad, sTB;

uint pieceWord(uint i) {
    uint w = pc.pieceLen / 4u;
    return w == 0u ? 0u : pieces[pc.pieceBase + min(i, w - 1u)];
}

uint pieceByte(uint b) { return (pieceWord(b / 4u) >> (8u * (b % 4u))) & 255u; }

uint lowWord(uint i) { return pc.lowWords == 0u ? 0u : lows[pc.lowBase + min(i, pc.lowWords - 1u)]; }

uint tableWord(uint i) { return table[pc.tableBase + i]; }

uint gInfo, gOff, gPieceW, gLow0;

uint msgWord(uint q) {
    if (q == 0u) return gInfo;
    if (q == 1u) return gOff;
    q -= 2u;
    if (q < gPieceW) return pieceWord(gOff + q);
    q -= gPieceW;
    return lowWord(gLow0 + q);
}

// checkPiece (one invocation): the piece header of a coded chunk of size bytes at word off (§14.4). It fills lens,
// sLo, sHi, sTB and the lane table; false for a corrupt header.
bool checkPiece(uint off, uint size) {
    if (size < 4u + 4u * HUFF_COUNTS_WORDS) return false;
    uint h = pieceWord(off);
    uint lo = h & 255u, hi = (h >> 8) & 255u;
    if (lo > hi) return false;
    uint tb = tableBytes(lo, hi);
    if (tb + 4u * HUFF_COUNTS_WORDS > size) return false;
    uint kraft = 0u, used = 0u;
    for (uint s = 0u; s < 256u; s++) lens[s] = 0u;
    for (uint s = lo; s <= hi; s++) {
        uint i = s - lo;
        uint l = (pieceByte(4u * off + 2u + i / 2u) >> (4u * (i & 1u))) & 15u;
        if (l > HUFF_MAX_LEN) return false;
        if (l != 0u) {
            kraft += 1u << (HUFF_MAX_LEN - l);
            used++;
        }
        lens[s] = l;
    }
    if (lens[lo] == 0u || lens[hi] == 0u) return false;
    if (used == 1u && lens[lo] != 1u) return false;
    if (used > 1u && kraft != (1u << HUFF_MAX_LEN)) return false;
    uint at = off + tb / 4u + HUFF_COUNTS_WORDS;
    for (uint l = 0u; l < LANES; l++) {
        uint nw = (pieceWord(off + tb / 4u + l / 2u) >> (16u * (l & 1u))) & 0xFFFFu;
        laneAt[l] = at;
        laneNW[l] = nw;
        at += nw;
    }
    sLo = lo;
    sHi = hi;
    sTB = tb;
    return 4u * (at - off) == size;
}

void report(uint cls, uint v) {
    atomicOr(status[0], cls == 1u ? STATUS_CORRUPT : (cls == 2u ? STATUS_CHECKSUM : STATUS_NONCANONICAL));
    atomicMin(status[cls], v);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    initCRC();
    barrier();
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint v0 = c * N;
        uint info = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_INFO);
        uint off = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF); // words
        uint stored = tableWord(c * CHUNK_ENTRY_WORDS + ENTRY_CRC);
        uint kind = info >> KIND_SHIFT;
        bool raw = kind == CHUNK_RAW;
        uint rawSize = (m + 3u) & ~3u;
        uint size = raw ? rawSize : 4u * (info & HUFF_PIECE_MASK);
        uint words = pc.pieceLen / 4u;
        // Structure (§14.4) in the reference's order: the entry, its offset against the running sum (the previous
        // entry's offset and size: when that entry is itself wrong, the lower chunk is reported anyway), the piece
        // inside the section, the piece header; the section's end after the last chunk (no chunk: status[4]).
        uint expect = 0u;
        if (c > 0u) {
            uint pinfo = tableWord((c - 1u) * CHUNK_ENTRY_WORDS + ENTRY_INFO);
            expect = tableWord((c - 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF) + ((pinfo >> KIND_SHIFT) == CHUNK_RAW ? N / 4u : (pinfo & HUFF_PIECE_MASK));
        }
        bool corrupt = kind > CHUNK_RAW || (raw && (info & HUFF_PIECE_MASK) != 0u) || off != expect
            || off > words || size / 4u > words - off;
        if (t == 0u) sBad = corrupt ? 1u : (raw ? 0u : (checkPiece(off, size) ? 0u : 1u));
        barrier();
        if (sBad != 0u) {
            if (t == 0u) report(1u, c);
            barrier();
            continue;
        }
        if (last && off + size / 4u != words && t == 0u) {
            atomicOr(status[0], STATUS_CORRUPT);
            status[4] = 1u;
        }
        bool ncCRC = false;
        if (pc.checksums != 0u && (PROF & 1u) == 0u) {
            gInfo = info;
            gOff = off;
            gPieceW = size / 4u;
            gLow0 = v0 / 4u;
            uint lowW = last ? pc.lowWords - gLow0 : N / 4u;
            uint total = 2u + gPieceW + lowW;
            uint L = (total + WG - 1u) / WG;
            uint lo = min(t * L, total), hi = min(lo + L, total);
            uint reg = 0u;
            for (uint q = lo; q < hi; q++) reg = crcWord(reg, msgWord(q));
            reg = shiftBytes(reg, 4u * (total - hi));
            uint crc = wgXor(reg) ^ shiftBytes(0xFFFFFFFFu, 4u * total) ^ 0xFFFFFFFFu;
            if (crc != stored) {
                if (t == 0u) report(2u, c);
                barrier();
                continue;
            }
        } else {
            ncCRC = stored != 0u;
        }
        if (!raw) {
            if (t == 0u) canonical();
            for (uint i = t; i < 2048u; i += WG) dtab[i] = 0u;
            barrier();
            for (uint s = sLo + t; s <= sHi; s += WG) {
                uint r = rc[s], l = r >> 16;
                if (l == 0u) continue;
                for (uint i = r & 0xFFFFu; i < 2048u; i += 1u << l) dtab[i] = s | (l << 8);
            }
            barrier();
        }
        uint l = t % LANES;
        uint cntL = laneValues(m, l);
        uint at = raw ? 0u : laneAt[l], nw = raw ? 0u : laneNW[l];
        uint pos = 0u;           // bits of the lane consumed
        uint cwi = 0xFFFFFFF0u;  // lane word index cached in w0 (and w1 = the next); none yet
        uint w0 = 0u, w1 = 0u;
        uint bad = 0u;           // 1: lane stream corrupt, 2: non-canonical
        uint rounds = ((m + LANES - 1u) / LANES + BATCH - 1u) / BATCH;
        for (uint r = 0u; r < rounds; r++) {
            if (t < LANES) {
                for (uint k = 0u; k < BATCH; k++) {
                    uint p = r * BATCH + k;
                    uint e = 0u;
                    if (p < cntL && (PROF & 2u) == 0u) {
                        if (raw) {
                            e = pieceByte(4u * off + p * LANES + l);
                        } else {
                            uint wi = pos >> 5;
                            if (wi != cwi) {
                                w0 = wi == cwi + 1u ? w1 : (wi < nw ? pieceWord(at + wi) : 0u);
                                w1 = wi + 1u < nw ? pieceWord(at + wi + 1u) : 0u;
                                cwi = wi;
                            }
                            uint sh = pos & 31u;
                            uint bits = sh == 0u ? w0 : (w0 >> sh) | (w1 << (32u - sh));
                            uint d = dtab[bits & 2047u];
                            uint len = d >> 8;
                            if (len == 0u) bad |= 1u;
                            pos += len;
                            e = d & 255u;
                        }
                    }
                    she[k * LANES + l] = e;
                }
            }
            barrier();
            for (uint w = t; w < BATCH * LANES / 2u; w += WG) {
                uint j = r * BATCH * LANES + 2u * w; // chunk-relative value
                if (j >= m) continue;
                uint lw = lowWord((v0 + j) / 4u) >> (8u * (j % 4u));
                uint a = lw & 255u, b = (lw >> 8) & 255u;
                uint ov = ((a & 0x80u) << 8) | (she[2u * w] << 7) | (a & 0x7Fu);
                if (j + 1u < m) ov |= (((b & 0x80u) << 8) | (she[2u * w + 1u] << 7) | (b & 0x7Fu)) << 16;
                uint di = (v0 + j) / 2u;
                if (di < pc.dstWords && ((PROF & 4u) == 0u || ov == 0x12345678u)) dst[pc.dstBase + di] = ov;
            }
            barrier();
        }
        if (!raw && t < LANES && (PROF & 2u) == 0u) {
            if (pos > 32u * nw) bad |= 1u;
            else if ((pos + 31u) / 32u != nw) bad |= 2u;
            else if ((pos & 31u) != 0u && (pieceWord(at + pos / 32u) >> (pos & 31u)) != 0u) bad |= 2u;
        }
        if (t == 0u && (PROF & 8u) == 0u) {
            if (ncCRC) bad |= 2u;
            // Low-stream padding of the last chunk.
            if (last && m % 4u != 0u && (lowWord(v0 / 4u + m / 4u) >> (8u * (m % 4u))) != 0u) bad |= 2u;
            if (raw) {
                if (m % 4u != 0u && (pieceWord(off + m / 4u) >> (8u * (m % 4u))) != 0u) bad |= 2u;
            } else {
                uint n = sHi - sLo + 1u, tb = sTB;
                if (n % 2u == 1u && (pieceByte(4u * off + 2u + n / 2u) >> 4) != 0u) bad |= 2u;
                for (uint b = 2u + (n + 1u) / 2u; b < tb; b++) {
                    if (pieceByte(4u * off + b) != 0u) bad |= 2u;
                }
                if (size >= rawSize) bad |= 2u;
            }
        }
        if (raw) {
            // A raw chunk is canonical only if vkzip's code would not make its piece smaller.
            for (uint i = t; i < 256u; i += WG) cnt[i] = 0u;
            barrier();
            for (uint j = t; j < m; j += WG) atomicAdd(cnt[pieceByte(4u * off + j)], 1u);
            barrier();
            if (t == 0u) buildLengths();
            barrier();
            if (t < LANES) {
                uint lb = 0u;
                for (uint p = 0u; p < cntL; p++) lb += lens[pieceByte(4u * off + p * LANES + t)];
                laneBitsS[t] = (lb + 31u) / 32u;
            }
            barrier();
            if (t == 0u) {
                uint sz = tableBytes(sLo, sHi) + 4u * HUFF_COUNTS_WORDS;
                for (uint k = 0u; k < LANES; k++) sz += 4u * laneBitsS[k];
                if (sz < rawSize) bad |= 2u;
            }
        }
        bad = wgOr(bad);
        if (t == 0u && bad != 0u) report(3u, (c << 1) | ((bad & 1u) != 0u ? 0u : 1u));
        barrier();
    }
}
