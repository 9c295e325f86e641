// Shared by the SplitZip-4 and zf12 decoders: both store a chunk's 4-bit codes and its low bytes as two streams
// of 8-value slots. Needs the kernel's codes, lows and lowsv bindings.

// loadSlot loads slot s of a chunk m values long whose code stream starts at word codeBase and low stream at word
// lowBase (uvec2 lowvBase; lowAligned: lowBase is even, so whole slots load as one uvec2): the slot's code word in
// x, its low words in y and z, zero past the chunk's end. The decoders call it for U slots in an unrolled loop
// before using any, for memory-level parallelism.
uvec3 loadSlot(uint s, uint m, uint codeBase, uint lowBase, uint lowvBase, bool lowAligned) {
    uint v0 = 8u * s;
    uvec3 r = uvec3(0u);
    if (v0 + 8u <= m && lowAligned) {
        r.x = codes[codeBase + s];
        r.yz = lowsv[lowvBase + s];
    } else if (v0 < m) {
        r.x = codes[codeBase + s];
        r.y = lows[lowBase + 2u * s];
        if (v0 + 4u < m) r.z = lows[lowBase + 2u * s + 1u];
    }
    return r;
}
