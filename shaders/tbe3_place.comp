#version 450
// TBE-3 encode, pass 3 of 3: one workgroup per chunk (grid-stride). With the side offsets from pass 2's prefix sum,
// writes the chunk's side piece at its final place — fallback exponents at ranks from an ordered scan of the zero
// codes in its plane piece, or a raw chunk's remaining exponents — records the offset, and finishes the chunk's
// CRC-32C: header and side piece here, folded with the dense pieces' linear CRC from pass 1. A coded chunk zeroes
// its own side piece first (the body may be a caller's buffer, never cleared by the host): fallback bytes are ORed
// in, four to a word from different threads.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_TBE3_PLACE
#include "contracts.glsl"

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"
#include "tbe3_common.glsl"

uint expAt(uint lc, uint v) {
    uint w = srcw[4u * pc.srcBase + (lc * N + v) / 2u];
    return ((v & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
}

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : (((info & TBE3_COUNT_MASK) + 3u) & ~3u);
}

shared uint earlier; // side bytes of the block's earlier chunks

uint chunkOff;
#define sideAt(q) side[pc.sideBase + chunkOff + (q)]

void main() {
    uint t = gl_LocalInvocationID.x;
    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = sideSize(info, m);
        bool raw = (info >> KIND_SHIFT) == CHUNK_RAW;
        uint k = info & TBE3_COUNT_MASK;
        // Offset: the block's prefix plus the side sizes of the block's earlier chunks (all full chunks).
        uint v = 0u;
        for (uint c2 = (c & ~63u) + t; c2 < c; c2 += WG) // WG may be below 64
            v += sideSize(table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO], N);
        // Summed with shared atomics rather than subgroupAdd: the loop above leaves subgroups diverged, and
        // subgroup sums after divergent code are not guaranteed (see scanStep).
        if (t == 0u) {
            carry = 0u;
            earlier = 0u;
        }
        barrier();
        if (v != 0u) atomicAdd(earlier, v);
        barrier();
        uint off = work[pc.nb + (c >> 6)] + earlier;
        uint sw = pc.sideBase + off / 4u;
        uint pw = 2u * tiles(m);
        uint pBase = pc.planeBase + lc * PIECE_WORDS;
        uint pBytes = planePiece(m);
        if (raw) {
            // Exponents of values pBytes .. m-1, four to a word.
            for (uint q = t; q < size / 4u; q += WG) {
                uint wd = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint x = pBytes + 4u * q + b;
                    if (x < m) wd |= expAt(lc, x) << (8u * b);
                }
                side[sw + q] = wd;
            }
        } else if (k > 0u) {
            for (uint q = t; q < size / 4u; q += WG) side[sw + q] = 0u;
            memoryBarrierBuffer();
            barrier();
            for (uint j = 0u; j < ITERS; j++) {
                uint u = j * WG + t;
                uint z = 0u;
                if (u < pw) z = ~(planes[pBase + u] | planes[pBase + pw + u] | planes[pBase + 2u * pw + u]) & presentMask(u, m);
                uint rank = scanStep(bitCount(z));
                while (z != 0u) {
                    uint b = findLSB(z);
                    z &= z - 1u;
                    uint r = min(rank, k - 1u); // pass 1 counted exactly k zero codes; bounded all the same
                    atomicOr(side[sw + r / 4u], expAt(lc, 32u * u + b) << (8u * (r & 3u)));
                    rank++;
                }
            }
        }
        memoryBarrierBuffer();
        barrier();
        uint crc = 0u;
        if (pc.checksums != 0u) {
            chunkOff = off / 4u;
            uint lin = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC];
            HEADER_CRC(crc, info, off, size / 4u, pBytes + 4u * ((m + 3u) / 4u), lin);
        }
        if (t == 0u) {
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = crc;
        }
        barrier();
    }
}
