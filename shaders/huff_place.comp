#version 450
// huff encode, pass 3 of 3: one workgroup per chunk (grid-stride) finds its piece offset (the prefix of its
// 64-chunk block from pass 2 plus the earlier chunks of the block), copies its piece from scratch, records the
// offset in words, and computes the chunk's CRC-32C over info, offset, piece and low piece (docs/FORMAT.md §14.5):
// the invocations take the message's words strided (coalesced, BATCH loads in flight), copy the piece's words as
// they pass and fold each word into a Horner register; the registers' terms XOR to the CRC (huff_common.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "layout.glsl"
#include "common.glsl"
#define HUFF_CRC_STRIDE WG
#define KERNEL_HUFF_PLACE
#include "contracts.glsl"
#include "huff_common.glsl"

shared uint sBefore;

uint pieceSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? ((m + 3u) & ~3u) : 4u * (info & HUFF_PIECE_MASK);
}

shared uint sCrc;

void main() {
    uint t = gl_LocalInvocationID.x;
    initStrideCRC();
    barrier();
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint size = pieceSize(info, m);
        if (t == 0u) {
            sBefore = 0u;
            sCrc = 0u;
        }
        barrier();
        uint before = 0u; // piece bytes of the earlier chunks of the 64-chunk block (all full)
        for (uint c2 = (c & ~63u) + t; c2 < c; c2 += WG) before += pieceSize(table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO], N);
        atomicAdd(sBefore, before);
        barrier();
        uint off = (work[pc.nb + (c >> 6)] + sBefore) / 4u; // words
        uint slot = c * (N / 4u);
        // Message words: info (the initial register folded in), offset, piece (copied on the way), low piece.
        // Invocation t takes the words q ≡ t (mod WG) in order; each range in whole batches of BATCH loads, then
        // one batch with bounds, so that no word pays for the others' selects.
        bool ck = pc.checksums != 0u;
        uint pw = size / 4u, pe = 2u + pw, low0 = c * (N / 4u);
        uint T = ck ? pe + (last ? pc.lowWords - low0 : N / 4u) : pe;
        uint u = t == 0u ? ~info : (t == 1u ? off : 0u);
        uint q = t < 2u ? t + WG : t; // the first piece word
        for (; q + (BATCH - 1u) * WG < pe; q += WG * BATCH) {
            uint wv[BATCH];
            [[unroll]] for (uint b = 0u; b < BATCH; b++) wv[b] = scratch[slot + q + b * WG - 2u];
            [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                pieces[pc.pieceBase + off + q + b * WG - 2u] = wv[b];
                if (ck) u = shiftT(u) ^ wv[b];
            }
        }
        if (q < pe) {
            uint wv[BATCH];
            [[unroll]] for (uint b = 0u; b < BATCH; b++) wv[b] = q + b * WG < pe ? scratch[slot + q + b * WG - 2u] : 0u;
            [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                if (q + b * WG < pe) {
                    pieces[pc.pieceBase + off + q + b * WG - 2u] = wv[b];
                    if (ck) u = shiftT(u) ^ wv[b];
                }
            }
        }
        if (ck) {
            uint lb = pc.lowBase + low0 - pe; // low word q at lows[lb + q]
            q = pe + (t + WG - pe % WG) % WG; // the first low word
            for (; q + (BATCH - 1u) * WG < T; q += WG * BATCH) {
                uint wv[BATCH];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) wv[b] = lows[lb + q + b * WG];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) u = shiftT(u) ^ wv[b];
            }
            if (q < T) {
                uint wv[BATCH];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) wv[b] = q + b * WG < T ? lows[lb + q + b * WG] : 0u;
                [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                    if (q + b * WG < T) u = shiftT(u) ^ wv[b];
                }
            }
        }
        if (ck && t < T) atomicXor(sCrc, strideTerm(u, t, T));
        barrier();
        if (t == 0u) {
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = ck ? sCrc ^ 0xFFFFFFFFu : 0u;
        }
        barrier();
    }
}
