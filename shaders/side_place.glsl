// side_place.glsl: the placement pass of the encoders whose pass 1 leaves each chunk's side piece in a scratch slot
// (sz4_place, tbe3_place; docs/FORMAT.md §5.6). One small workgroup per chunk (grid-stride; the host picks 32
// invocations where the device allows) finds the chunk's side offset (pass 1's side sums of the 64-chunk blocks
// before the chunk's, plus the side sizes of the chunks before it in its block), copies its side piece there from
// the slot, records the offset in the chunk table and finishes the chunk's CRC-32C: the header and side piece are
// checksummed here and the dense pieces' linear CRC from pass 1 is folded in. The last chunk stores the side
// section's total, the one number the host reads back. Small workgroups keep a whole tensor's chunks in one wave
// with one short chain each (workgroups of 256 took four waves on the H200, each chunk waiting on a serial CRC).
//
// Needs before inclusion: the kernel's declarations (contracts.glsl: table, scratch, side, consts, work and the
// place push block), common.glsl, crc_tables.glsl (NO_SHARED_TABLES); N, the values of a full chunk; SCRATCH, the
// words of a chunk's scratch slot; sideSize(info, m), the side bytes of a chunk of m values with that info word;
// denseShift(reg, last), reg shifted over the chunk's dense pieces (last: the tensor's last chunk).

shared uint placeRed[WG]; // per-subgroup partial results
shared uint offSum;
// The first PRE·WG words of the chunk's scratch slot, loaded before the chunk's entry is known (the placement reads
// the rest, past a short coded chunk's side piece, from memory).
const uint PRE = 4u;
shared uint stage[PRE * WG];

// word q of the chunk's checksummed header: info, offset, then the side piece
uint hword(uint q, uint info, uint off, uint lc) {
    return q == 0u ? info : (q == 1u ? off : (q - 2u < PRE * WG ? stage[q - 2u] : scratch[lc * SCRATCH + q - 2u]));
}

// wgXor reduces over the workgroup; every invocation gets the result.
uint wgXor(uint v) {
    v = subgroupXor(v);
    if (gl_NumSubgroups == 1u) return v;
    if (subgroupElect()) placeRed[gl_SubgroupID] = v;
    barrier();
    v = 0u;
    for (uint i = 0u; i < gl_NumSubgroups; i++) v ^= placeRed[i];
    barrier();
    return v;
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint kc = consts[CONST_KC + t];
    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        // Every load that depends on no other goes first, in one round: the chunk's entry, the side words of its
        // scratch slot (whatever its size turns out to be; indices clamped into the slot), the side sums of the
        // earlier 64-chunk blocks (pass 1's) and the side sizes of the earlier chunks of its block, PRE per
        // invocation at once rather than one loop trip per load.
        uint info = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint lin = table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC]; // pass 1's linear CRC of the dense pieces
        uint pre[PRE];
        [[unroll]] for (uint u = 0u; u < PRE; u++) pre[u] = scratch[lc * SCRATCH + min(u * WG + t, SCRATCH - 1u)];
        uint v = 0u; // every earlier chunk is full
        uint nb = c / 64u;
        for (uint b0 = 0u; b0 < nb; b0 += PRE * WG) {
            uint w[PRE];
            [[unroll]] for (uint u = 0u; u < PRE; u++) {
                uint b = b0 + u * WG + t;
                w[u] = b < nb ? work[b] : 0u;
            }
            [[unroll]] for (uint u = 0u; u < PRE; u++) v += w[u];
        }
        for (uint c0 = c & ~63u; c0 < c; c0 += PRE * WG) {
            uint w[PRE];
            [[unroll]] for (uint u = 0u; u < PRE; u++) {
                uint c2 = c0 + u * WG + t;
                w[u] = c2 < c ? table[pc.tableBase + c2 * CHUNK_ENTRY_WORDS + ENTRY_INFO] : 0u;
            }
            [[unroll]] for (uint u = 0u; u < PRE; u++) v += sideSize(w[u], N);
        }
        uint size = sideSize(info, m);
        // Summed by a shared atomic, not subgroupAdd: a subgroup sum after loops whose trip counts differ per
        // invocation is the construct an H200 compiler got wrong in TBE-3.
        barrier(); // the previous chunk's readers of offSum and stage are done
        [[unroll]] for (uint u = 0u; u < PRE; u++) stage[u * WG + t] = pre[u];
        if (t == 0u) offSum = 0u;
        barrier();
        atomicAdd(offSum, v);
        barrier();
        uint off = offSum;
        uint reg = 0u;
        if (pc.checksums != 0u) {
            // Horner per invocation over words t, t+WG, ..., padded with zero words in front to a multiple of WG
            // (leading zeros leave a linear CRC unchanged), the initial register folded into the first word: the
            // invocations' terms, each shifted over the words after it, sum to the register itself. The side words
            // are placed as they are read, four per invocation in flight.
            uint n = 2u + size / 4u, iters = (n + WG - 1u) / WG, pad = iters * WG - n;
            uint a = 0u;
            for (uint j = 0u; j < iters; j += 4u) {
                uint w4[4];
                [[unroll]] for (uint u = 0u; u < 4u; u++) {
                    uint q = (j + u) * WG + t;
                    w4[u] = 0u;
                    if (j + u < iters && q >= pad) {
                        uint i = q - pad;
                        w4[u] = hword(i, info, off, lc) ^ (i == 0u ? 0xFFFFFFFFu : 0u);
                        if (i >= 2u) side[pc.sideBase + off / 4u + i - 2u] = w4[u];
                    }
                }
                [[unroll]] for (uint u = 0u; u < 4u; u++)
                    if (j + u < iters) a = shiftBy(TAB_M4T, a) ^ w4[u];
            }
            reg = wgXor(mulmod(a, kc));
        } else {
            for (uint i = t; i < size / 4u; i += WG) side[pc.sideBase + off / 4u + i] = hword(i + 2u, info, off, lc);
        }
        if (t == 0u) {
            uint crc = 0u;
            if (pc.checksums != 0u) crc = denseShift(reg, last) ^ lin ^ 0xFFFFFFFFu;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = off;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = crc;
            if (last) work[2u * pc.nb] = off + size;
        }
    }
}
