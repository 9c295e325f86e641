#version 450
// zf12 encode, pass 3 of 3 (docs/FORMAT.md §10): one workgroup per chunk (grid-stride) places the chunk's side
// piece at its final offset, records the offset in the chunk table and finishes the chunk's CRC-32C: info, offset,
// header piece and side piece are checksummed here and the dense pieces' linear CRC from pass 1 is folded in.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_ZF12_PLACE
#include "contracts.glsl"
const uint N = 1u << SHIFT;
const uint SCRATCH = N / 8u;
const uint BLOCKS = N / ZF12_BLOCK;
const uint HWORDS = (BLOCKS + 3u) / 4u;
const uint SERIAL_MAX = 64u; // header+side words checksummed by one thread; longer ones in parallel

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"

shared uint red[WG];
shared uint sgX[WG];

uint blockSide(uint mb) { return (((mb + 1u) / 2u) + 3u) & ~3u; }

// word q of the chunk's checksummed header: info, offset, header piece, then the side piece
uint hword(uint q, uint info, uint off, uint lc) {
    if (q == 0u) return info;
    if (q == 1u) return off;
    if (q < 2u + HWORDS) return heads[pc.headBase + lc * HWORDS + q - 2u];
    return scratch[lc * SCRATCH + q - 2u - HWORDS];
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint kc = consts[CONST_KC + t];
    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = ZF12_RAW_SIDE * info;
        uint r = m % ZF12_BLOCK;
        if (r != 0u) {
            uint lb = m / ZF12_BLOCK; // the short last block
            uint h = (heads[pc.headBase + lc * HWORDS + lb / 4u] >> (8u * (lb % 4u))) & 0xFFu;
            if (h == ZF12_RAW_HEADER) size = size - ZF12_RAW_SIDE + blockSide(r);
        }
        // Offset: the 64-chunk block's prefix plus the side sizes of the earlier chunks of the block (all full, so
        // 256 bytes per raw block).
        uint c2 = (c & ~63u) + t;
        uint v = (t < 64u && c2 < c) ? ZF12_RAW_SIDE * table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO] : 0u;
        v = subgroupAdd(v);
        if (subgroupElect()) red[gl_SubgroupID] = v;
        barrier();
        uint off = work[pc.nb + (c >> 6)];
        for (uint s = 0u; s < gl_NumSubgroups; s++) off += red[s];
        for (uint i = t; i < size / 4u; i += WG) side[pc.sideBase + off / 4u + i] = scratch[lc * SCRATCH + i];
        uint words = 2u + HWORDS + size / 4u;
        uint crc = 0u;
        if (pc.checksums != 0u && words <= SERIAL_MAX) {
            if (t == 0u) {
                uint reg = 0xFFFFFFFFu;
                for (uint q = 0u; q < words; q++) reg = shiftBy(TAB_M4, reg ^ hword(q, info, off, lc));
                crc = (last ? mulmod(reg, pc.kdLast) : shiftBy(TAB_ML, shiftBy(TAB_MC, reg)))
                    ^ table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] ^ 0xFFFFFFFFu;
            }
        } else if (pc.checksums != 0u) {
            // Parallel: Horner per thread over words t, t+WG, ..., padded with zero words in front to a multiple of
            // WG, the initial register folded into the first word (as in sz4_place.comp).
            uint iters = (words + WG - 1u) / WG, pad = iters * WG - words;
            uint a = 0u;
            for (uint j = 0u; j < iters; j++) {
                uint q = j * WG + t;
                uint w = q < pad ? 0u : hword(q - pad, info, off, lc) ^ (q == pad ? 0xFFFFFFFFu : 0u);
                a = shiftBy(TAB_M4T, a) ^ w;
            }
            uint x = subgroupXor(mulmod(a, kc));
            if (subgroupElect()) sgX[gl_SubgroupID] = x;
            barrier();
            if (t == 0u) {
                uint reg = 0u;
                for (uint s = 0u; s < gl_NumSubgroups; s++) reg ^= sgX[s];
                crc = (last ? mulmod(reg, pc.kdLast) : shiftBy(TAB_ML, shiftBy(TAB_MC, reg)))
                    ^ table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] ^ 0xFFFFFFFFu;
            }
        }
        if (t == 0u) {
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = crc;
        }
        barrier();
    }
}
