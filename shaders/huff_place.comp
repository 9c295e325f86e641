#version 450
// huff encode, pass 3 of 3: one workgroup per chunk (grid-stride) finds its piece offset (the prefix of its
// 64-chunk block from pass 2 plus the earlier chunks of the block), copies its piece from scratch, records the
// offset in words, and computes the chunk's CRC-32C over info, offset, piece and low piece (docs/FORMAT.md §14.5),
// each invocation a contiguous run of words, combined by shifting.
#extension GL_GOOGLE_include_directive : require

#include "layout.glsl"
#include "common.glsl"
#include "huff_common.glsl"

layout(std430, binding = 0) buffer Table { uint table[]; };
layout(std430, binding = 1) readonly buffer Scratch { uint scratch[]; };
layout(std430, binding = 2) writeonly buffer Pieces { uint pieces[]; };
layout(std430, binding = 3) readonly buffer Lows { uint lows[]; };
layout(std430, binding = 4) readonly buffer Work { uint work[]; }; // [nb, 2nb): block prefixes

layout(push_constant) uniform PC {
    uint chunks;
    uint lastLen;
    uint nb;        // 64-chunk blocks
    uint checksums;
    uint lowWords;  // words of the low stream
    uint tableBase; // words from each binding's start to its data
    uint pieceBase;
    uint lowBase;
} pc;

shared uint sBefore;

uint pieceSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? ((m + 3u) & ~3u) : 4u * (info & HUFF_PIECE_MASK);
}

uint gInfo, gOff, gSlot, gPieceW, gLow0;

uint msgWord(uint q) {
    if (q == 0u) return gInfo;
    if (q == 1u) return gOff;
    q -= 2u;
    if (q < gPieceW) return scratch[gSlot + q];
    q -= gPieceW;
    return lows[pc.lowBase + gLow0 + q];
}

void main() {
    uint t = gl_LocalInvocationID.x;
    initCRC();
    barrier();
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = pieceSize(info, m);
        if (t == 0u) sBefore = 0u;
        barrier();
        uint before = 0u; // piece bytes of the earlier chunks of the 64-chunk block (all full)
        for (uint c2 = (c & ~63u) + t; c2 < c; c2 += WG) before += pieceSize(table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO], N);
        atomicAdd(sBefore, before);
        barrier();
        uint off = (work[pc.nb + (c >> 6)] + sBefore) / 4u; // words
        uint slot = c * (N / 4u);
        for (uint i = t; i < size / 4u; i += WG) pieces[pc.pieceBase + off + i] = scratch[slot + i];
        uint crc = 0u;
        if (pc.checksums != 0u) {
            gInfo = info;
            gOff = off;
            gSlot = slot;
            gPieceW = size / 4u;
            gLow0 = c * (N / 4u);
            uint lowW = last ? pc.lowWords - gLow0 : N / 4u;
            uint words = 2u + gPieceW + lowW;
            uint L = (words + WG - 1u) / WG;
            uint lo = min(t * L, words), hi = min(lo + L, words);
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
