#version 450
// auto encode (docs/FORMAT.md §11), after every candidate format has encoded the whole tensor into a body of its
// own: one dispatch per candidate, in id order, one thread per chunk. Each sizes the one-chunk body its candidate
// gives the chunk (its dense pieces, a table entry and its side piece) and keeps it when it is the first candidate
// or strictly smaller than the best so far (so ties stay with the lowest id). sz4_scan then turns the sizes into
// piece offsets.
#extension GL_GOOGLE_include_directive : require

#include "layout.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(std430, binding = 0) buffer Work { uint work[]; };              // [0,C) sizes, [C,2C) offsets, [2C] total, [2C+1,3C+1) format id
layout(std430, binding = 1) readonly buffer Body { uint body[]; };     // the candidate's whole body
layout(std430, binding = 2) readonly buffer CWork { uint cwork[]; };   // its prefix-sum words: side total

layout(push_constant) uniform PC {
    uvec4 d;         // table word offset, side-total word in its work, dense bytes of a full chunk, of the last
    uint chunks;
    uint id;         // the candidate's format id
    uint first;      // 1: the first candidate (writes every chunk)
    uint base;       // word offset of the body within its binding
} pc;

uint entryWord(uint c, uint w) { return body[pc.base + pc.d.x + c * CHUNK_ENTRY_WORDS + w]; }

void main() {
    uint C = pc.chunks;
    for (uint c = gl_GlobalInvocationID.x; c < C; c += gl_NumWorkGroups.x * WG) {
        bool last = c == C - 1u;
        uint off = entryWord(c, ENTRY_SIDE_OFF);
        uint next = last ? cwork[pc.d.y] : entryWord(c + 1u, ENTRY_SIDE_OFF);
        uint size = (last ? pc.d.w : pc.d.z) + 4u * CHUNK_ENTRY_WORDS + (next - off);
        if (pc.first != 0u || size < work[c]) {
            work[c] = size;
            work[2u * C + 1u + c] = pc.id;
        }
    }
}
