// Shared by the BF16 auto encode kernels (auto_size, auto_sz4, auto_zf12, auto_tbe3): chunk geometry, the
// candidates' size arithmetic (docs/FORMAT.md §5, §10, §12) and the load of a slot of 8 values. Needs WG, SHIFT,
// the bindings srcv/srcw and the push constant srcBase (uvec4 offset of the tensor's first value in src).

const uint N = 1u << SHIFT;            // values per full chunk
const uint SLOTS = N / 8u;             // 8 values (one uvec4) per slot
const uint ZF_BLOCKS = N / ZF12_BLOCK; // zf12 blocks per full chunk
const uint ZF_HWORDS = (ZF_BLOCKS + 3u) / 4u; // zf12 header piece in words: max(4, n/512) bytes
const uint ZF_BSLOTS = ZF12_BLOCK / 8u; // slots per zf12 block

uint align4(uint x) { return (x + 3u) & ~3u; }

// The work words after auto_size's sizes, total and format ids: the size sums of every 64 and every 4,096 chunks.
uint sumsL1(uint C) { return 3u * C + 1u; }
uint sumsL2(uint C) { return sumsL1(C) + (C + 63u) / 64u; }

// sz4RawSide is the side piece of a raw SplitZip-4 chunk of m values.
uint sz4RawSide(uint m) { return align4(m / 2u); }

// tbe3PlanePiece and tbe3RawSide are a TBE-3 chunk's plane piece and a raw chunk's side piece.
uint tbe3PlanePiece(uint m) { return TBE3_TILE_BYTES * ((m + TBE3_TILE_VALUES - 1u) / TBE3_TILE_VALUES); }
uint tbe3RawSide(uint m) {
    uint p = tbe3PlanePiece(m);
    return m > p ? align4(m - p) : 0u;
}

// zfBlockSide is the side bytes of a raw zf12 block of mb values: its high nibbles, padded to 4.
uint zfBlockSide(uint mb) { return align4((mb + 1u) / 2u); }

// loadSlot reads slot s (values 8s .. 8s+7) of chunk c, zeroing values at or past m; valid gets a bit per value
// inside the chunk.
uvec4 loadSlot(uint c, uint s, uint m, out uint valid) {
    uint v0 = 8u * s;
    uvec4 x = uvec4(0u);
    valid = 0u;
    if (v0 + 8u <= m) {
        x = srcv[pc.srcBase + c * SLOTS + s];
        valid = 0xFFu;
    } else if (v0 < m) {
        valid = (1u << (m - v0)) - 1u;
        for (uint q = 0u; q < 4u; q++) {
            if (v0 + 2u * q < m) x[q] = srcw[4u * (pc.srcBase + c * SLOTS + s) + q];
            if (v0 + 2u * q + 1u >= m) x[q] &= 0xFFFFu;
        }
    }
    return x;
}
