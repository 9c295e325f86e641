// Helpers shared by the TBE-3 kernels (docs/FORMAT.md §12). A thread works on units of 32 values: one 32-bit word
// of each of the chunk's three bit-planes and 8 words of its SM piece. Units u = j·WG + t are handed out so that the
// words a thread reads from each plane (and the 32-byte SM blocks) are strided sequences: their CRC is a per-thread
// Horner sum, shifted into place and XORed over the workgroup at the end of the chunk.
//
// Needs before inclusion: WG, SHIFT, consts[], layout.glsl, common.glsl, crc_tables.glsl.

const uint N = 1u << SHIFT;       // values per full chunk
const uint UNITS = N / 32u;       // 32-value units per full chunk
const uint ITERS = UNITS / WG;    // units per thread (WG divides UNITS: the host checks)
const uint PIECE_WORDS = 3u * N / 32u; // plane-piece words of a full chunk
#if defined(KERNEL_TBE3_ENCODE) || defined(KERNEL_TBE3_PLACE)
// Words of a chunk's scratch slot, where pass 1 leaves its side piece for tbe3_place: rawSide(N) / 4, which holds a
// raw chunk's side piece and the ceil(k/4) words of a coded chunk's k fallback bytes (coded only while fewer).
const uint SCRATCH = (N - TBE3_TILE_BYTES * (N / TBE3_TILE_VALUES)) / 4u;
#endif

uint tiles(uint m) { return (m + TBE3_TILE_VALUES - 1u) / TBE3_TILE_VALUES; }

// planePiece is the plane-piece size in bytes of a chunk of m values.
uint planePiece(uint m) { return TBE3_TILE_BYTES * tiles(m); }

// rawSide is the side-piece size of a raw chunk of m values.
uint rawSide(uint m) {
    uint p = planePiece(m);
    return m > p ? ((m - p + 3u) & ~3u) : 0u;
}

// presentMask has a bit for each of a unit's values that lie inside the chunk.
uint presentMask(uint u, uint m) {
    uint v0 = 32u * u;
    if (v0 >= m) return 0u;
    return m - v0 >= 32u ? 0xFFFFFFFFu : (1u << (m - v0)) - 1u;
}

// The code-c mask of a unit from its three plane words.
uint codeMask(uint c, uint q0, uint q1, uint q2) {
    return ((c & 1u) != 0u ? q0 : ~q0) & ((c & 2u) != 0u ? q1 : ~q1) & ((c & 4u) != 0u ? q2 : ~q2);
}

// pairCode is the six code bits of values b and b+1 of a unit: plane 0's two bits, then plane 1's, then plane 2's.
uint pairCode(uint q0, uint q1, uint q2, uint b) {
    return ((q0 >> b) & 3u) | (((q1 >> b) & 3u) << 2) | (((q2 >> b) & 3u) << 4);
}

// blockCRC is the linear CRC register of 8 words (32 bytes).
uint blockCRC(uvec4 a, uvec4 b) {
    uint r = 0u;
    r = shiftBy(TAB_M4, r ^ a.x); r = shiftBy(TAB_M4, r ^ a.y); r = shiftBy(TAB_M4, r ^ a.z); r = shiftBy(TAB_M4, r ^ a.w);
    r = shiftBy(TAB_M4, r ^ b.x); r = shiftBy(TAB_M4, r ^ b.y); r = shiftBy(TAB_M4, r ^ b.z); r = shiftBy(TAB_M4, r ^ b.w);
    return r;
}

// stepSM advances an SM Horner register over one stride of WG blocks (32·WG bytes).
uint stepSM(uint a) {
    return shiftBy(TAB_M8T, shiftBy(TAB_M8T, shiftBy(TAB_M8T, shiftBy(TAB_M8T, a))));
}

#include "crc_pow.glsl"

shared uint red[4u * WG];   // per-subgroup partial results (4 per subgroup); scanStep uses 2·WG words
shared uint carry;          // running total of an ordered scan

// denseCRC combines per-thread Horner registers into the linear CRC of a chunk's plane piece followed by its SM
// piece (m values). aP: one register per plane, over words u = j·WG + t; aS: over 32-byte SM blocks; ks is this
// thread's x^(256·(WG-1-t)). Every thread calls it (it synchronises the workgroup); thread 0 gets the result.
uint denseCRC(uint aP0, uint aP1, uint aP2, uint aS, uint ks, uint m) {
    uint kc = consts[CONST_KC + gl_LocalInvocationID.x];
    uint x0 = subgroupXor(mulmod(aP0, kc));
    uint x1 = subgroupXor(mulmod(aP1, kc));
    uint x2 = subgroupXor(mulmod(aP2, kc));
    uint xs = subgroupXor(mulmod(aS, ks));
    barrier(); // red may still be read by an earlier reduction
    if (subgroupElect()) {
        red[4u * gl_SubgroupID] = x0;
        red[4u * gl_SubgroupID + 1u] = x1;
        red[4u * gl_SubgroupID + 2u] = x2;
        red[4u * gl_SubgroupID + 3u] = xs;
    }
    barrier();
    uint lin = 0u;
    if (gl_LocalInvocationID.x == 0u) {
        uint l0 = 0u, l1 = 0u, l2 = 0u, ls = 0u;
        for (uint s = 0u; s < gl_NumSubgroups; s++) {
            l0 ^= red[4u * s];
            l1 ^= red[4u * s + 1u];
            l2 ^= red[4u * s + 2u];
            ls ^= red[4u * s + 3u];
        }
        uint pw = 2u * tiles(m);            // words per plane
        uint smb = (m + 3u) & ~3u;          // SM piece bytes
        if (pw != UNITS) {                  // the registers covered UNITS words per plane: drop the zero tail
            uint inv = xinv(4u * (UNITS - pw));
            l0 = mulmod(l0, inv);
            l1 = mulmod(l1, inv);
            l2 = mulmod(l2, inv);
        }
        if (smb != N) ls = mulmod(ls, xinv(N - smb));
        uint pl = mulmod(l0, xpow(8u * pw)) ^ mulmod(l1, xpow(4u * pw)) ^ l2;
        lin = mulmod(pl, xpow(smb)) ^ ls;
    }
    barrier();
    return lin;
}

// headerCRC is the standard-init CRC register after info, off and the words of a side piece (read through
// sideAt(i), a macro the kernel defines), shifted over the chunk's dense pieces of dense bytes and combined with
// their linear CRC lin: the chunk's CRC-32C. Every thread calls it; thread 0 gets the result.
#define HEADER_CRC(result, info, off, sideWords, dense, lin) { \
    uint _words = 2u + (sideWords); \
    uint _reg = 0xFFFFFFFFu; \
    if (_words <= 64u) { \
        if (gl_LocalInvocationID.x == 0u) { \
            for (uint _q = 0u; _q < _words; _q++) { \
                uint _w = _q == 0u ? (info) : (_q == 1u ? (off) : sideAt(_q - 2u)); \
                _reg = shiftBy(TAB_M4, _reg ^ _w); \
            } \
        } \
    } else { \
        /* zeros in front up to a multiple of WG, the initial register folded into the first word */ \
        uint _iters = (_words + WG - 1u) / WG, _pad = _iters * WG - _words; \
        uint _a = 0u; \
        for (uint _j = 0u; _j < _iters; _j++) { \
            uint _q = _j * WG + gl_LocalInvocationID.x, _r = _q - _pad; \
            uint _w = _q < _pad ? 0u : (_r == 0u ? ~(info) : (_r == 1u ? (off) : sideAt(_r - 2u))); \
            _a = shiftBy(TAB_M4T, _a) ^ _w; \
        } \
        uint _x = subgroupXor(mulmod(_a, consts[CONST_KC + gl_LocalInvocationID.x])); \
        barrier(); \
        if (subgroupElect()) red[gl_SubgroupID] = _x; \
        barrier(); \
        if (gl_LocalInvocationID.x == 0u) { \
            _reg = 0u; \
            for (uint _s = 0u; _s < gl_NumSubgroups; _s++) _reg ^= red[_s]; \
        } \
        barrier(); \
    } \
    result = mulmod(_reg, xpow(dense)) ^ (lin) ^ 0xFFFFFFFFu; \
}

#include "wg_scan.glsl"
