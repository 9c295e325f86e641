// Shared by the piece decoders of auto bodies that check CRCs (splitzip4, zf12, TBE-3): included after
// auto_pieces.glsl and crc_tables.glsl; needs the push constants autoBase and checksums.

// autoPieceCRC checks chunk c's CRC word in the auto table (invocation 0 reports): with checksums, the CRC-32C of
// the entry's info and offset words (FORMAT.md §11); without, the word must be 0, the one canonical value.
void autoPieceCRC(uint c, uint aInfo, uint aOff) {
    if (gl_LocalInvocationID.x != 0u) return;
    uint stored = table[pc.autoBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC];
    if (pc.checksums != 0u) {
        uint reg = shiftBy(TAB_M4, 0xFFFFFFFFu ^ aInfo);
        if ((shiftBy(TAB_M4, reg ^ aOff) ^ 0xFFFFFFFFu) != stored) report(STATUS_CHECKSUM, c);
    } else if (stored != 0u) {
        report(STATUS_NONCANONICAL, c);
    }
}
