// Where a chunk's streams are, in the decoders of 8-value slots (SplitZip-4, zf12): at offsets computed from the
// chunk index in a body of the kernel's format, or (PIECES, an auto body, docs/FORMAT.md §11) in the chunk's
// piece, a one-chunk body at the offset its auto table entry gives (tabW, codeW, lowW: the piece's words). The
// kernel defines NEXT_OFF and SIDE_LEN for the non-piece case, where the two decoders differ.
#if PIECES
uint gSideLen, gSideW; // the chunk's piece: side section bytes, first side word
#define TAB_BASE tabW
#define NEXT_OFF gSideLen
#define FIRST_CHUNK true
#define SIDE_LEN gSideLen
#define SIDE_BASE gSideW
#define LOW_ALIGNED (lowW & 1u) == 0u
#define CODE_BASE codeW
#define LOWV_BASE lowW / 2u
#define LOW_BASE lowW
#else
#define TAB_BASE pc.tableBase + c * CHUNK_ENTRY_WORDS
#define FIRST_CHUNK c == 0u
#define SIDE_BASE pc.sideBase
#define LOW_ALIGNED (pc.lowBase & 1u) == 0u
#define CODE_BASE pc.codeBase + lc * SLOTS
#define LOWV_BASE pc.lowBase / 2u + lc * (N / 8u)
#define LOW_BASE pc.lowBase + lc * (N / 4u)
#endif
