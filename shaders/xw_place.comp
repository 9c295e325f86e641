#version 450
// Exponent-window encode, pass 3 of 3: one workgroup per chunk (grid-stride) finds its side offset (the prefix of
// its 64-chunk block from pass 2 plus the earlier chunks of the block), copies its side piece from scratch, records
// the offset, and computes the chunk's CRC-32C over info, offset, side, plane and byte pieces (docs/FORMAT.md
// §13.2.5), each invocation a contiguous run of words, combined by shifting.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"
#include "common.glsl"
#define KERNEL_XW_PLACE
#include "contracts.glsl"
#include "xw_common.glsl"

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : codedSide(info & XW_COUNT_MASK);
}

// The chunk's checksummed message, word by word: info, offset, side piece, plane piece, byte piece.
uint gInfo, gOff, gSlot, gSideW, gPlane0, gPlaneW, gLow0;

uint msgWord(uint q) {
    if (q == 0u) return gInfo;
    if (q == 1u) return gOff;
    q -= 2u;
    if (q < gSideW) return scratch[gSlot + q];
    q -= gSideW;
    if (q < gPlaneW) return planes[pc.planeBase + gPlane0 + q];
    q -= gPlaneW;
    return lows[pc.lowBase + gLow0 + q];
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint rank = wgRank();
    initCRC();
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
            gInfo = info;
            gOff = off;
            gSlot = slot;
            gSideW = size / 4u;
            gPlane0 = c * GPC * P;
            gPlaneW = last ? pc.planeWords - gPlane0 : GPC * P;
            gLow0 = c * GPC * LW;
            uint lowW = last ? pc.lowWords - gLow0 : GPC * LW;
            uint words = 2u + gSideW + gPlaneW + lowW;
            uint L = (words + WG - 1u) / WG;
            uint lo = min(rank * L, words), hi = min(lo + L, words);
            uint reg = 0u;
            for (uint q = lo; q < hi; q++) reg = crcWord(reg, msgWord(q));
            reg = shiftBytes(reg, 4u * (words - hi));
            crc = wgXor(reg) ^ shiftBytes(0xFFFFFFFFu, 4u * words) ^ 0xFFFFFFFFu;
        }
        if (t == 0u) {
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = crc;
        }
        barrier();
    }
}
