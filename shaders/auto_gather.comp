#version 450
// auto encode, last pass (docs/FORMAT.md §11): one dispatch per candidate, one workgroup per chunk that chose it,
// copies the chunk's piece out of the candidate's whole body into the auto body — dense pieces, the table entry
// with its side offset set to 0 (the chunk CRC corrected for that change: CRC-32C is affine, so only the changed
// word's term moves), the side piece — and writes the auto table entry with its CRC.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require

#include "layout.glsl"

#define KERNEL_AUTO_GATHER
#include "contracts.glsl"
const uint REPL = 1u;

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"

uint src(uint w) { return body[pc.base + w]; }

void main() {
    uint t = gl_LocalInvocationID.x;
    uint C = pc.chunks;
    uint piecesW = pc.outBase + CHUNK_ENTRY_WORDS * C; // first piece word
    for (uint c = gl_WorkGroupID.x; c < C; c += gl_NumWorkGroups.x) {
        if (work[2u * C + 1u + c] != pc.id) continue;
        bool last = c == C - 1u;
        uint off = work[C + c]; // bytes from the first piece
        uint dst = piecesW + off / 4u;
        uint dense = 0u;
        for (uint i = 0u; i < 3u; i++) {
            if (pc.streams[i] == 0xFFFFFFFFu) continue;
            uint n = (last ? pc.lastP[i] : pc.full[i]) / 4u;
            uint from = pc.streams[i] + c * (pc.full[i] / 4u);
            for (uint q = t; q < n; q += WG) outw[dst + q] = src(from + q);
            dst += n;
            dense += 4u * n;
        }
        uint e = pc.streams.w + c * CHUNK_ENTRY_WORDS;
        uint info = src(e + ENTRY_INFO), sideOff = src(e + ENTRY_SIDE_OFF), crc = src(e + ENTRY_CRC);
        uint sideLen = work[c] - dense - 4u * CHUNK_ENTRY_WORDS;
        for (uint q = t; q < sideLen / 4u; q += WG) outw[dst + CHUNK_ENTRY_WORDS + q] = src(pc.full.w + sideOff / 4u + q);
        if (t == 0u) {
            if (pc.checksums != 0u && sideOff != 0u) {
                // The chunk CRC covers info, side offset, then dense and side bytes: the offset's term, shifted over
                // those bytes, leaves with it.
                uint term = shiftBy(TAB_M4, sideOff);
                POW_FROM(term, dense + sideLen, CONST_XPOW);
                crc ^= term;
            }
            outw[dst + ENTRY_INFO] = info;
            outw[dst + ENTRY_SIDE_OFF] = 0u;
            outw[dst + ENTRY_CRC] = crc;
            uint aInfo = pc.id << KIND_SHIFT, aOff = off / 4u;
            uint aCrc = 0u;
            if (pc.checksums != 0u) aCrc = shiftBy(TAB_M4, shiftBy(TAB_M4, 0xFFFFFFFFu ^ aInfo) ^ aOff) ^ 0xFFFFFFFFu;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = aInfo;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = aOff;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = aCrc;
        }
    }
}
