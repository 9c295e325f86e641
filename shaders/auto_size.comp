#version 450
// auto encode of BF16, pass 1 of 2 (docs/FORMAT.md §11.2): one workgroup per chunk (grid-stride) reads the chunk's
// values once and sizes its one-chunk body under each candidate — splitzip4 (escapes: values whose exponent the
// codebook lacks), zf12 (raw blocks: the field range of each 512-value block) and tbe3 (fallbacks: values outside
// the best 7-exponent window of the chunk's exponent histogram) — and keeps the smallest, ties to the lowest id.
// It stores the size (and adds it to the sums of 64 and 4,096 chunks from which pass 2 finds piece offsets),
// the format id, the chunk's info word in that format and, for a zf12 chunk, its header piece: pass 2's piece
// encoders code each chunk once, in its format, in place.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require

#include "layout.glsl"

#define KERNEL_AUTO_SIZE
#include "contracts.glsl"
#include "auto_common.glsl"

shared uint hist[256];
// The exponents expBase .. expBase+15 (the codebook's densest range, where nearly every value of KV data falls) are
// counted without atomics: invocation t owns the counters cnt[d·WG + t] of exponent expBase + d (the 32 lanes of a
// subgroup hit 32 banks), summed into hist at the chunk's end. Other exponents go to hist by shared atomics.
shared uint cnt[16u * WG];
// The smallest and largest exponent of each zf12 block (a block's field range is theirs shifted right by one).
shared uint bmin[ZF_BLOCKS];
shared uint bmax[ZF_BLOCKS];
shared uint best;            // the tbe3 window: covered values << 8 | (255 - start), the largest wins
shared uint zside;           // zf12 side bytes
shared uint zraw;            // zf12 raw blocks
shared uint size, id, info;  // the smallest candidate so far: its size, format and info word

// countSlot counts the values of slot x that valid marks. Called with valid = 0xFF for whole slots, so those
// compile without the tests.
void countSlot(uvec4 x, uint valid) {
    uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint b = 0u; b < 8u; b++) {
        uint e = (x[b >> 1] >> (7u + 16u * (b & 1u))) & 0xFFu, d = e - pc.expBase;
        if ((valid & (1u << b)) != 0u) {
            if (d < 16u) cnt[d * WG + t] += 1u;
            else atomicAdd(hist[e], 1u);
        }
    }
}

// rangeSlot returns the smallest and largest exponent of the values of slot x that valid marks (255 and 0 if none).
void rangeSlot(uvec4 x, uint valid, out uint lo, out uint hi) {
    lo = 255u;
    hi = 0u;
    [[unroll]] for (uint b = 0u; b < 8u; b++) {
        uint e = (x[b >> 1] >> (7u + 16u * (b & 1u))) & 0xFFu;
        if ((valid & (1u << b)) != 0u) {
            lo = min(lo, e);
            hi = max(hi, e);
        }
    }
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint C = pc.chunks;
    for (uint d = 0u; d < 16u; d++) cnt[d * WG + t] = 0u;
    for (uint c = gl_WorkGroupID.x; c < C; c += gl_NumWorkGroups.x) {
        uint m = c == C - 1u ? pc.lastLen : N;
        uint nb = (m + ZF12_BLOCK - 1u) / ZF12_BLOCK;
        uint dense = align4((m + 1u) / 2u) + align4(m);
        for (uint e = t; e < 256u; e += WG) hist[e] = 0u;
        if (t == 0u) {
            best = 0u;
            zside = 0u;
            zraw = 0u;
        }
        barrier();
        for (uint j = 0u; j < SLOTS / WG; j += U) {
            // U slots loaded first (slot j+u of every invocation is contiguous across the workgroup), then counted.
            uvec4 xs[U];
            uint valid[U];
            [[unroll]] for (uint u = 0u; u < U; u++) xs[u] = loadSlot(c, (j + u) * WG + t, m, valid[u]);
            [[unroll]] for (uint u = 0u; u < U; u++) {
                if (valid[u] == 0xFFu) countSlot(xs[u], 0xFFu);
                else countSlot(xs[u], valid[u]);
            }
        }
        for (uint d = 0u; d < 16u; d++) {
            uint v = subgroupAdd(cnt[d * WG + t]);
            cnt[d * WG + t] = 0u;
            if (subgroupElect() && v != 0u) atomicAdd(hist[pc.expBase + d], v);
        }
        barrier();
        for (uint s = t; s <= TBE3_MAX_WINDOW_START; s += WG) {
            uint cov = 0u;
            for (uint i = 0u; i < TBE3_WINDOW; i++) cov += hist[s + i];
            atomicMax(best, (cov << 8) | (255u - s));
        }
        barrier();
        if (t == 0u) {
            // splitzip4: the escapes are the values whose exponent is none of the codebook's 16.
            uint cov4 = 0u;
            for (uint i = 0u; i < 16u; i++) {
                if (((pc.cbFirst >> i) & 1u) != 0u) cov4 += hist[(pc.cb[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu];
            }
            uint k4 = m - cov4;
            bool raw4 = !(ESCAPE_SIZE * k4 < sz4RawSide(m));
            size = dense + 4u * CHUNK_ENTRY_WORDS + (raw4 ? sz4RawSide(m) : ESCAPE_SIZE * k4);
            id = FORMAT_SPLITZIP4;
            info = raw4 ? (CHUNK_RAW << KIND_SHIFT) : k4;
            uint w = 255u - (best & 0xFFu), k3 = m - (best >> 8);
            bool raw3 = !(align4(k3) < tbe3RawSide(m));
            uint s3 = tbe3PlanePiece(m) + align4(m) + 4u * CHUNK_ENTRY_WORDS + (raw3 ? tbe3RawSide(m) : align4(k3));
            if (s3 < size) {
                size = s3;
                id = FORMAT_TBE3;
                info = raw3 ? (CHUNK_RAW << KIND_SHIFT) : ((w << TBE3_WINDOW_SHIFT) | k3);
            }
        }
        barrier();
        // zf12 comes between the two by id: it wins when smaller than splitzip4 and not larger than tbe3. Its
        // smallest size (every block coded) rules it out on most data (KV data: TBE-3 is smaller; data SplitZip-4
        // codes without escapes: SplitZip-4 is); only otherwise are the block ranges found, from a second read.
        uint zmin = dense + 4u * ZF_HWORDS + 4u * CHUNK_ENTRY_WORDS;
        bool zf = id == FORMAT_SPLITZIP4 ? zmin < size : zmin <= size;
        if (zf) {
            for (uint b = t; b < ZF_BLOCKS; b += WG) {
                bmin[b] = 255u;
                bmax[b] = 0u;
            }
            barrier();
            for (uint j = 0u; j < SLOTS / WG; j++) {
                uint sl = j * WG + t, valid, lo, hi;
                rangeSlot(loadSlot(c, sl, m, valid), valid, lo, hi);
                // Lanes of a subgroup mostly share a block: reduce there first.
                uint blk = sl / ZF_BSLOTS;
                if (subgroupAllEqual(blk)) {
                    lo = subgroupMin(lo);
                    hi = subgroupMax(hi);
                    if (subgroupElect()) {
                        atomicMin(bmin[blk], lo);
                        atomicMax(bmax[blk], hi);
                    }
                } else {
                    atomicMin(bmin[blk], lo);
                    atomicMax(bmax[blk], hi);
                }
            }
            barrier();
            for (uint b = t; b < nb; b += WG) {
                if ((bmax[b] >> 1) - (bmin[b] >> 1) > ZF12_SPAN) {
                    atomicAdd(zraw, 1u);
                    atomicAdd(zside, zfBlockSide(min(ZF12_BLOCK, m - b * ZF12_BLOCK)));
                }
            }
            barrier();
            uint s2 = zmin + zside;
            zf = id == FORMAT_SPLITZIP4 ? s2 < size : s2 <= size;
            barrier(); // every invocation has read size and id
            if (zf) {
                if (t == 0u) {
                    size = s2;
                    id = FORMAT_ZF12;
                    info = zraw;
                }
                // Header byte of block b: its base, 0xFF for a raw block, 0 past the chunk's blocks.
                for (uint q = t; q < ZF_HWORDS; q += WG) {
                    uint hw = 0u;
                    for (uint i = 0u; i < 4u; i++) {
                        uint b = 4u * q + i;
                        uint lo = bmin[b] >> 1;
                        uint h = b >= nb ? 0u : ((bmax[b] >> 1) - lo > ZF12_SPAN ? ZF12_RAW_HEADER : lo);
                        hw |= h << (8u * i);
                    }
                    meta[C + c * ZF_HWORDS + q] = hw;
                }
            }
            barrier();
        }
        if (t == 0u) {
            work[c] = size;
            work[2u * C + 1u + c] = id;
            // The size sums of the chunk's 64 and 4,096 chunks (zeroed by the host).
            atomicAdd(work[sumsL1(C) + (c >> 6)], size);
            atomicAdd(work[sumsL2(C) + (c >> 12)], size);
            meta[c] = info;
        }
        barrier(); // the chunk's shared counts are read before the next chunk clears them
    }
}
