#version 450
// auto encode (docs/FORMAT.md §11), after every candidate format has encoded the whole tensor into a body of its
// own: one thread per chunk sizes the one-chunk body each candidate gives the chunk (its dense pieces, a table
// entry and its side piece) and keeps the smallest, ties to the lowest format id (candidates come in id order).
// sz4_scan then turns the sizes into piece offsets.
#extension GL_GOOGLE_include_directive : require

#include "layout.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

layout(std430, binding = 0) buffer Work { uint work[]; };               // [0,C) sizes, [C,2C) offsets, [2C] total, [2C+1,3C+1) choice
layout(std430, binding = 1) readonly buffer BodyA { uint bodyA[]; };   // candidate 0's whole body
layout(std430, binding = 2) readonly buffer BodyB { uint bodyB[]; };   // candidate 1's (bound to A's when there is one)
layout(std430, binding = 3) readonly buffer WorkA { uint workA[]; };   // candidate 0's prefix-sum words: side total
layout(std430, binding = 4) readonly buffer WorkB { uint workB[]; };

layout(push_constant) uniform PC {
    uvec4 a;         // candidate 0: table word offset, side-total word in its work, dense bytes of a full chunk, of the last
    uvec4 b;         // candidate 1
    uint chunks;
    uint cands;      // 1 or 2
    uint aBase;      // word offsets of the bodies within their bindings
    uint bBase;
} pc;

uint entryWord(uint k, uint c, uint w) {
    return k == 0u ? bodyA[pc.aBase + pc.a.x + c * CHUNK_ENTRY_WORDS + w] : bodyB[pc.bBase + pc.b.x + c * CHUNK_ENTRY_WORDS + w];
}

// sizeOf is the one-chunk body candidate k gives chunk c: dense pieces, entry, side piece.
uint sizeOf(uint k, uint c) {
    uvec4 d = k == 0u ? pc.a : pc.b;
    bool last = c == pc.chunks - 1u;
    uint off = entryWord(k, c, ENTRY_SIDE_OFF);
    uint next = last ? (k == 0u ? workA[d.y] : workB[d.y]) : entryWord(k, c + 1u, ENTRY_SIDE_OFF);
    return (last ? d.w : d.z) + 4u * CHUNK_ENTRY_WORDS + (next - off);
}

void main() {
    uint C = pc.chunks;
    for (uint c = gl_GlobalInvocationID.x; c < C; c += gl_NumWorkGroups.x * WG) {
        uint best = sizeOf(0u, c), pick = 0u;
        if (pc.cands > 1u) {
            uint s = sizeOf(1u, c);
            if (s < best) {
                best = s;
                pick = 1u;
            }
        }
        work[c] = best;
        work[2u * C + 1u + c] = pick;
    }
}
