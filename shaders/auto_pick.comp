#version 450
// auto encode (docs/FORMAT.md §11), after every candidate format has encoded the whole tensor into a body of its
// own: one dispatch per candidate, in id order, one thread per chunk. Each sizes the one-chunk body its candidate
// gives the chunk (its dense pieces, a table entry and its side piece) and keeps it when it is the first candidate
// or strictly smaller than the best so far (so ties stay with the lowest id). sz4_scan then turns the sizes into
// piece offsets.
#extension GL_GOOGLE_include_directive : require

#include "layout.glsl"

#define KERNEL_AUTO_PICK
#include "contracts.glsl"

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
