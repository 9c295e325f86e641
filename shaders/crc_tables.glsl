// Shared-memory CRC shift tables, loaded from the consts buffer (docs/FORMAT.md §5.6; codec/vkcodec builds them).
// consts layout (words): five shift tables, each in a slot of 1024 words — M^4, M^(4T), M^(8T), M^(n/2) (over a
// full chunk's code piece), M^n (over its low piece) — each one table of 2^CRC_BITS entries per CRC_BITS-bit field of
// the register (CRC_TAB words used); then KC[T] = x^(32(T-t)), KL[T] = x^(8(8(T-t)-4)), XPOW[32] = x^(8·2^k) and
// XINV[32] = x^(-8·2^k). A table of at most 32 entries lies in distinct banks (and in one 128-byte line of the
// consts buffer), so its lookups never conflict. Each shared-memory entry is replicated REPL times.
// Needs before inclusion: the kernel's declarations (contracts.glsl: WG, REPL, CRC_BITS, consts[]).
#include "crc_fields.glsl"

#define TAB_M4   0u
#define TAB_M4T  1u
#define TAB_M8T  2u
#define TAB_MC   3u
#define TAB_ML   4u
#define NTAB     5u
#define CONST_KC (NTAB * 1024u)
#define CONST_KL (NTAB * 1024u + WG)
#define CONST_XPOW (NTAB * 1024u + 2u * WG)
#define CONST_XINV (NTAB * 1024u + 2u * WG + 32u)

// shiftConsts applies table t (TAB_*) to register r, read from the consts buffer (cached).
uint shiftConsts(uint t, uint r) {
    uint x;
    CRC_LOOKUP(x, consts, t * 1024u, 1u, r);
    return x;
}

#ifdef NO_SHARED_TABLES
// Kernels that shift only a few registers per chunk read the tables straight from the consts buffer: loading
// 20 KiB into shared memory per workgroup would cost more than it saves.
uint shiftBy(uint t, uint r) { return shiftConsts(t, r); }
#else
#ifdef CRC_SHARED_HOT
// Only the two tables of the inner loops (M^(4T), M^(8T), consecutive in consts) are copied to shared memory; the
// others, used a few times per chunk, are read from the consts buffer. Shared memory bounds the workgroups an SM
// holds (NVIDIA's driver gave these kernels about 100 KiB per SM), and 12 KiB fewer per workgroup admit more.
const uint TAB_FIRST = TAB_M4T, TAB_SHARED = 2u;
#else
const uint TAB_FIRST = 0u, TAB_SHARED = NTAB;
#endif
shared uint tabs[TAB_SHARED * CRC_TAB * REPL]; // tables TAB_FIRST .. TAB_FIRST + TAB_SHARED - 1

void loadTables() {
    for (uint i = gl_LocalInvocationID.x; i < TAB_SHARED * CRC_TAB * REPL; i += WG) {
        uint e = i / REPL;
        tabs[i] = consts[(TAB_FIRST + e / CRC_TAB) * 1024u + e % CRC_TAB];
    }
}

// shiftBy applies table t (TAB_*) to register r.
uint shiftBy(uint t, uint r) {
    if (t < TAB_FIRST || t >= TAB_FIRST + TAB_SHARED) return shiftConsts(t, r);
    uint x;
    CRC_LOOKUP(x, tabs, (t - TAB_FIRST) * CRC_TAB * REPL + gl_LocalInvocationID.x % REPL, REPL, r);
    return x;
}
#endif
