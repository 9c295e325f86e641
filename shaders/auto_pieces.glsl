// Shared by the piece decoders of auto bodies (docs/FORMAT.md §11). Needs the kernel's table binding, its push
// constants autoBase, piecesLen, cands and validate, and its report(bit, chunk).
//
// autoIdle reports whether none of this workgroup's chunks (first + lc, lc = workgroup id, by the grid stride) is
// one the kernel must look at: a chunk of its format self, or, in the validating dispatch, one of no candidate. An
// idle workgroup leaves before loading its CRC tables, so the dispatches of the formats a tensor hardly uses cost
// a table read per chunk and nothing more. Every invocation computes the same answer (uniform control flow).
bool autoIdle(uint self, uint first, uint count) {
    for (uint lc = gl_WorkGroupID.x; lc < count; lc += gl_NumWorkGroups.x) {
        uint info = table[pc.autoBase + (first + lc) * CHUNK_ENTRY_WORDS + ENTRY_INFO];
        uint f = info >> KIND_SHIFT;
        if (f == self) return false;
        if (pc.validate != 0u && ((info & COUNT_MASK) != 0u || f >= 32u || ((pc.cands >> f) & 1u) == 0u)) return false;
    }
    return true;
}

void report(uint bit, uint c);

// autoPiece reads chunk c's entry of the auto table (its info word, the piece's offset and where the next piece
// starts, in words from the first piece) and reports whether the chunk is this kernel's: a piece of format self.
// An entry that names no candidate of the dtype, or has low info bits set, is corrupt, reported by the validating
// dispatch only (so once). Uniform within a workgroup.
bool autoPiece(uint self, uint c, bool last, out uint info, out uint off, out uint next) {
    info = table[pc.autoBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO];
    off = table[pc.autoBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF];
    next = last ? pc.piecesLen / 4u : table[pc.autoBase + (c + 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF];
    uint fmt = info >> KIND_SHIFT;
    if ((info & COUNT_MASK) != 0u || fmt >= 32u || ((pc.cands >> fmt) & 1u) == 0u) {
        if (pc.validate != 0u && gl_LocalInvocationID.x == 0u) report(STATUS_CORRUPT, c);
        return false;
    }
    return fmt == self;
}

