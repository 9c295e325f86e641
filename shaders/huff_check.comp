#version 450
// huff decode's checksum pass (docs/FORMAT.md §14.5): one workgroup per chunk (grid-stride) computes the chunk's
// CRC-32C over info, offset, piece and low piece and reports a mismatch in huff_decode's status words (flag
// STATUS_CHECKSUM, the lowest such chunk in status[2]). The host records it beside huff_decode with no barrier
// between them: they read the same body and only meet in the status words, through atomics. The decoder is bound
// by the latency of its decode chains and its shared memory, not by memory traffic, so the CRC, a quarter of its
// work when folded into its blocks, runs in a kernel of its own with many more words in flight per SM. The
// invocations take the message's words strided (coalesced, BATCH loads in flight) and fold each word into a Horner
// register; the registers' terms XOR to the CRC (huff_common.glsl). A chunk whose entry puts its piece outside the
// piece section is skipped: huff_decode reports it as corrupt, which outranks any checksum.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "layout.glsl"
#include "common.glsl"
#define HUFF_CRC_STRIDE WG
#define KERNEL_HUFF_CHECK
#include "contracts.glsl"
#include "huff_common.glsl"

shared uint sCrc;

void main() {
    uint t = gl_LocalInvocationID.x;
    initStrideCRC();
    barrier();
    for (uint c = gl_WorkGroupID.x; c < pc.chunks; c += gl_NumWorkGroups.x) {
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint e = pc.tableBase + c * CHUNK_ENTRY_WORDS;
        uint info = table[e + ENTRY_INFO], off = table[e + ENTRY_SIDE_OFF], stored = table[e + ENTRY_CRC];
        uint kind = info >> KIND_SHIFT;
        uint pw = kind == CHUNK_RAW ? (m + 3u) / 4u : info & HUFF_PIECE_MASK; // piece words
        uint words = pc.pieceLen / 4u;
        bool inside = kind <= CHUNK_RAW && off <= words && pw <= words - off;
        if (t == 0u) sCrc = 0u;
        barrier();
        if (inside) {
            // Message words q: info (the initial register folded in), offset, piece, low piece. Invocation t takes
            // the words q ≡ t (mod WG) in order; each range in whole batches of BATCH loads, then one batch with
            // bounds, so that no word pays for the others' selects.
            uint pe = 2u + pw, low0 = c * (N / 4u);
            uint T = pe + (last ? pc.lowWords - low0 : N / 4u);
            uint u = t == 0u ? ~info : (t == 1u ? off : 0u);
            uint pb = pc.pieceBase + off - 2u; // piece word q at pieces[pb + q]
            uint q = t < 2u ? t + WG : t;      // the first piece word
            for (; q + (BATCH - 1u) * WG < pe; q += WG * BATCH) {
                uint wv[BATCH];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) wv[b] = pieces[pb + q + b * WG];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) u = shiftT(u) ^ wv[b];
            }
            if (q < pe) {
                uint wv[BATCH];
                [[unroll]] for (uint b = 0u; b < BATCH; b++) wv[b] = q + b * WG < pe ? pieces[pb + q + b * WG] : 0u;
                [[unroll]] for (uint b = 0u; b < BATCH; b++) {
                    if (q + b * WG < pe) u = shiftT(u) ^ wv[b];
                }
            }
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
            uint x = strideTerm(u, t, T);
            if (x != 0u) atomicXor(sCrc, x);
        }
        barrier();
        if (t == 0u && inside && (sCrc ^ 0xFFFFFFFFu) != stored) {
            atomicOr(status[0], STATUS_CHECKSUM);
            atomicMin(status[2], c);
        }
        barrier();
    }
}
