// Shared-memory CRC shift tables, loaded from the consts buffer (docs/FORMAT.md §5.6; codec/vkcodec builds them).
// consts layout (words): [0,1024) M^4, [1024,2048) M^(4T), [2048,3072) M^(8T) — each 4 tables of 256 entries, one
// per register byte —, then KC[T] = x^(32(T-t)), KL[T] = x^(8(8(T-t)-4)), then XPOW[32] = x^(8·2^k) and
// XINV[32] = x^(-8·2^k). Each table entry is replicated REPL times so lanes of a subgroup hit different banks.

#define TAB_M4   0u
#define TAB_M4T  1u
#define TAB_M8T  2u
#define CONST_KC 3072u
#define CONST_KL (3072u + WG)
#define CONST_XPOW (3072u + 2u * WG)
#define CONST_XINV (3072u + 2u * WG + 32u)

shared uint tabs[3u * 1024u * REPL];

void loadTables() {
    for (uint i = gl_LocalInvocationID.x; i < 3072u * REPL; i += WG) {
        tabs[i] = consts[i / REPL];
    }
}

// shiftBy applies table t (TAB_*) to register r.
uint shiftBy(uint t, uint r) {
    uint l = gl_LocalInvocationID.x % REPL;
    uint b = t * 1024u * REPL + l;
    return tabs[b + (r & 255u) * REPL] ^ tabs[b + (256u + ((r >> 8) & 255u)) * REPL]
         ^ tabs[b + (512u + ((r >> 16) & 255u)) * REPL] ^ tabs[b + (768u + (r >> 24)) * REPL];
}

// crcWordsSerial continues a CRC register over n words of a buffer read through the macro WORD(i).
// (Expanded inline where used, since GLSL cannot pass buffers.)
