#version 450
// SplitZip-4 encode, pass 3 of 3: one workgroup per chunk (grid-stride) places the chunk's side piece at its final
// offset, records the offset in the chunk table, and finishes the chunk's CRC-32C: the header and side piece are
// checksummed here and the dense pieces' linear CRC from pass 1 is folded in (docs/FORMAT.md §5.6).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SHIFT = 14;
layout(constant_id = 2) const uint REPL = 1;
const uint N = 1u << SHIFT;
const uint SCRATCH = N / 8u;
const uint SERIAL_MAX = 64u; // header+side words checksummed by one thread; longer ones in parallel

layout(std430, binding = 0) buffer Table { uint table[]; };
layout(std430, binding = 1) readonly buffer Scratch { uint scratch[]; }; // segment's scratch slots
layout(std430, binding = 2) writeonly buffer Side { uint side[]; };      // the whole side section
layout(std430, binding = 3) readonly buffer Consts { uint consts[]; };
layout(std430, binding = 4) readonly buffer Work { uint work[]; };

layout(push_constant) uniform PC {
    uint chunks;
    uint segFirst;
    uint segChunks;
    uint lastLen;
    uint nb;         // block count (prefixes at work[nb + b])
    uint kdFull;     // x^(8·|dense pieces|) of a full chunk
    uint kdLast;     // the same for the last chunk
    uint checksums;
    uint tableBase;  // word offsets of the table and the side section within their bindings
    uint sideBase;
} pc;

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"

shared uint red[WG];
shared uint sgX[WG];

uint rawSide(uint m) { return ((m / 2u) + 3u) & ~3u; }

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : ESCAPE_SIZE * (info & COUNT_MASK);
}

// word q of the chunk's checksummed header: info, offset, then the side piece
uint hword(uint q, uint info, uint off, uint lc) {
    return q == 0u ? info : (q == 1u ? off : scratch[lc * SCRATCH + q - 2u]);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint kc = consts[CONST_KC + t];
    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = sideSize(info, m);
        // Offset: the block's prefix plus the side sizes of the earlier chunks of the block (all full chunks).
        uint c2 = (c & ~63u) + t;
        uint v = (t < 64u && c2 < c) ? sideSize(table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO], N) : 0u;
        v = subgroupAdd(v);
        if (subgroupElect()) red[gl_SubgroupID] = v;
        barrier();
        uint off = work[pc.nb + (c >> 6)];
        for (uint s = 0u; s < gl_NumSubgroups; s++) off += red[s];
        for (uint i = t; i < size / 4u; i += WG) side[pc.sideBase + off / 4u + i] = scratch[lc * SCRATCH + i];
        uint words = 2u + size / 4u;
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
            // WG (leading zeros leave a linear CRC unchanged), the initial register folded into the first word: the
            // threads' terms sum to the register itself, with no chain of multiplications by one thread after it.
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
