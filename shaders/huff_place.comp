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
layout(constant_id = 2) const uint BATCH = 8; // message words loaded together by each invocation
#define HUFF_CRC_STRIDE WG
#define HUFF_CRC_STRIDE2 (WG * BATCH)
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
        // Message words: info (the initial register folded in), offset, piece (copied on the way), low piece. The
        // CRC takes them as a message of T' = T + P words whose first P are zero (leading zeros leave a linear CRC
        // unchanged), P making T' a multiple of S = WG·BATCH: each invocation keeps one Horner register per load of
        // its batch (stride S, so the batch's steps are independent of each other and the loads of the next batch
        // wait for no chain), every register takes the same number of words, and its term needs no per-register
        // power: Σ_b u_b·x^(32·(S − t − b·WG)) is a Horner over b with x^(32·WG) times x^(32·(WG − t)).
        uint pw = size / 4u, low0 = c * (N / 4u);
        uint lowW = last ? pc.lowWords - low0 : N / 4u;
        bool crc = pc.checksums != 0u;
        uint T = 2u + pw + (crc ? lowW : 0u);
        const uint S = WG * BATCH;
        uint P = crc ? (S - T % S) % S : 0u;
        uint u[BATCH];
        [[unroll]] for (uint b = 0u; b < BATCH; b++) u[b] = 0u;
        for (uint q0 = t; q0 < T + P; q0 += S) {
            uint wv[BATCH];
            [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                uint qp = q0 + b * WG, q = qp - P; // q wraps past T below the message's first word
                if (q < 2u) wv[b] = q == 0u ? ~info : off;
                else if (q < 2u + pw) wv[b] = scratch[slot + q - 2u];
                else wv[b] = q < T ? lows[pc.lowBase + low0 + q - 2u - pw] : 0u;
            }
            [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                uint q = q0 + b * WG - P;
                if (q >= 2u && q < 2u + pw) pieces[pc.pieceBase + off + q - 2u] = wv[b];
                if (crc) u[b] = shiftT2(u[b]) ^ wv[b];
            }
        }
        if (crc) {
            uint r = u[0];
            [[unroll]] for (uint b = 1u; b < BATCH; b++) r = shiftT(r) ^ u[b];
            atomicXor(sCrc, mulmod(r, kp[WG - t]));
        }
        barrier();
        if (t == 0u) {
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = pc.checksums != 0u ? sCrc ^ 0xFFFFFFFFu : 0u;
        }
        barrier();
    }
}
