// Shared by the piece decoders of auto bodies (docs/FORMAT.md §11). Needs the kernel's table binding and its push
// constants autoBase, cands and validate.
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
