#version 450
// SplitZip-4 encode, pass 2 of 2: one subgroup per chunk (grid-stride) finds the chunk's side offset (pass 1's side
// sums of the 64-chunk blocks before the chunk's, plus the side sizes of the chunks before it in its block), places
// its side piece there, records the offset in the chunk table and finishes the chunk's CRC-32C: the header and side
// piece are checksummed here and the dense pieces' linear CRC from pass 1 is folded in (docs/FORMAT.md §5.6). The
// last chunk stores the side section's total, the one number the host reads back. A subgroup per chunk keeps a
// whole tensor's chunks in one wave (a workgroup per chunk took four on the H200, each waiting on a serial CRC).
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

layout(std430, binding = 0) buffer Table { uint table[]; };
layout(std430, binding = 1) readonly buffer Scratch { uint scratch[]; }; // segment's scratch slots
layout(std430, binding = 2) writeonly buffer Side { uint side[]; };      // the whole side section
layout(std430, binding = 3) readonly buffer Consts { uint consts[]; };
layout(std430, binding = 4) buffer Work { uint work[]; }; // [0,nb) block side sums (pass 1), [2nb] the total

layout(push_constant) uniform PC {
    uint chunks;
    uint segFirst;
    uint segChunks;
    uint lastLen;
    uint nb;         // block count
    uint kdFull;     // x^(8·|dense pieces|) of a full chunk
    uint kdLast;     // the same for the last chunk
    uint checksums;
    uint tableBase;  // word offsets of the table and the side section within their bindings
    uint sideBase;
} pc;

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"

uint rawSide(uint m) { return ((m / 2u) + 3u) & ~3u; }

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : ESCAPE_SIZE * (info & COUNT_MASK);
}

// word q of the chunk's checksummed header: info, offset, then the side piece
uint hword(uint q, uint info, uint off, uint lc) {
    return q == 0u ? info : (q == 1u ? off : scratch[lc * SCRATCH + q - 2u]);
}

void main() {
    uint l = gl_SubgroupInvocationID, S = gl_SubgroupSize, per = gl_NumSubgroups;
    for (uint lc = gl_WorkGroupID.x * per + gl_SubgroupID; lc < pc.segChunks; lc += gl_NumWorkGroups.x * per) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = sideSize(info, m);
        uint v = 0u; // every earlier chunk is full
        for (uint b = l; b < c / 64u; b += S) v += work[b];
        for (uint c2 = (c & ~63u) + l; c2 < c; c2 += S)
            v += sideSize(table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO], N);
        uint off = subgroupAdd(v);
        for (uint i = l; i < size / 4u; i += S) side[pc.sideBase + off / 4u + i] = scratch[lc * SCRATCH + i];
        // The header-and-side register, words q = 0 .. n-1 with the initial register folded into word 0: reg =
        // XOR of M4^(n-q)(word q). Each invocation takes a run of consecutive words by Horner, then shifts its sum
        // over the words after its run.
        uint reg = 0u;
        if (pc.checksums != 0u) {
            uint n = 2u + size / 4u, run = (n + S - 1u) / S;
            uint q0 = l * run, q1 = min(q0 + run, n);
            uint h = 0u;
            for (uint q = q0; q < q1; q++) h = shiftBy(TAB_M4, h ^ hword(q, info, off, lc) ^ (q == 0u ? ~0u : 0u));
            if (q0 < q1) POW_FROM(h, 4u * (n - q1), CONST_XPOW);
            reg = subgroupXor(h);
        }
        if (subgroupElect()) {
            uint crc = 0u;
            if (pc.checksums != 0u)
                crc = (last ? mulmod(reg, pc.kdLast) : shiftBy(TAB_ML, shiftBy(TAB_MC, reg)))
                    ^ table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] ^ 0xFFFFFFFFu;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = crc;
            if (last) work[2u * pc.nb] = off + size;
        }
    }
}
