#version 450
// Exponent-window encode, pass 3 of 3: one workgroup per chunk (grid-stride) finds its side offset (the prefix of
// its 64-chunk block from pass 2 plus the earlier chunks of the block), copies its side piece from scratch, records
// the offset, and finishes the chunk's CRC-32C (docs/FORMAT.md §13.2.5): the header and side piece are summed here
// and joined to the dense pieces' linear CRC that pass 1 left in the CRC word.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"
#include "common.glsl"
#define KERNEL_XW_PLACE
#include "contracts.glsl"
#include "crc_fields.glsl"
#define XW_HS_CRC
#define XW_NO_BYTE_CRC
#include "xw_common.glsl"

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : codedSide(info & XW_COUNT_MASK);
}

// The chunk's checksummed header and side piece, word by word: info, offset, side words (from scratch).
uint gInfo, gOff, gSlot;

uint msgWord(uint q) {
    if (q == 0u) return gInfo;
    if (q == 1u) return gOff;
    return scratch[gSlot + q - 2u];
}

void main() {
    uint t = gl_LocalInvocationID.x;
    if (pc.checksums != 0u) loadHTable();
    barrier();
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = sideSize(info, m);
        uint before = 0u; // side bytes of the earlier chunks of the 64-chunk block (all full)
        for (uint c2 = (c & ~63u) + t; c2 < c; c2 += WG) before += sideSize(table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO], N);
        uint total;
        wgExclusiveAdd(before, total);
        uint off = work[pc.nb + (c >> 6)] + total;
        uint slot = c * HP * GPC;
        for (uint i = t; i < size / 4u; i += WG) side[pc.sideBase + off / 4u + i] = scratch[slot + i];
        uint crc = 0u;
        if (pc.checksums != 0u) {
            // The header and side piece, then the dense pieces' linear CRC from pass 1 joined after them.
            gInfo = info;
            gOff = off;
            gSlot = slot;
            uint reg = hsCRC(2u + size / 4u);
            uint dense = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC];
            crc = ~(mulmod(reg, last ? pc.shDenseLast : pc.shDenseFull) ^ dense);
        }
        barrier(); // every invocation has read the dense CRC before it is replaced
        if (t == 0u) {
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = crc;
        }
        barrier();
    }
}
