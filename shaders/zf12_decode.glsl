// zf12 decode (docs/FORMAT.md §10): one workgroup per chunk (grid-stride), one pass. Each chunk reads its header
// bytes, checks its table entry against them and against its neighbour's (so the table is validated without a
// prefix sum), decodes its values, checks the canonical-form rules and verifies its CRC-32C, reporting problems as
// status bits and the lowest chunk per class. Every index derived from payload data is bounded before use: no
// payload can make this kernel read or write outside its buffers.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#include "contracts.glsl" // the kernel's declarations (KERNEL_<NAME>: its .comp)
const uint N = 1u << SHIFT;
const uint SLOTS = N / 8u;
const uint ITERS = SLOTS / WG;
const uint BLOCKS = N / ZF12_BLOCK;
const uint HWORDS = (BLOCKS + 3u) / 4u;
const uint BSLOTS = ZF12_BLOCK / 8u;
const uint SERIAL_MAX = 64u;

// Where a chunk's pieces are: at offsets computed from the chunk index in a body of this format, or (PIECES, an
// auto body, docs/FORMAT.md §11) in the chunk's piece, a one-chunk body at the offset its auto table entry gives.
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
#define HEAD_BASE headW
#else
#define TAB_BASE pc.tableBase + c * CHUNK_ENTRY_WORDS
#define NEXT_OFF last ? pc.sideLen : table[pc.tableBase + (c + 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF]
#define FIRST_CHUNK c == 0u
#define SIDE_LEN pc.sideLen
#define SIDE_BASE pc.sideBase
#define LOW_ALIGNED (pc.lowBase & 1u) == 0u
#define CODE_BASE pc.codeBase + lc * SLOTS
#define LOWV_BASE pc.lowBase / 2u + lc * (N / 8u)
#define LOW_BASE pc.lowBase + lc * (N / 4u)
#define HEAD_BASE pc.headBase + lc * HWORDS
#endif

#include "common.glsl"
#if PIECES
#include "auto_pieces.glsl"
#endif
#include "crc_tables.glsl"

shared uint hdr[BLOCKS];    // header bytes of the chunk's blocks
shared uint before[BLOCKS]; // raw blocks before each block
shared uint zero[BLOCKS];   // coded block: some value has offset 0
shared uint rmin[BLOCKS];   // raw block: smallest field
shared uint rmax[BLOCKS];   // raw block: largest field
shared uint sgX[2u * WG];
shared uint carry;
shared uint bad;            // structure of this chunk broken

uint blockSide(uint mb) { return (((mb + 1u) / 2u) + 3u) & ~3u; }

// sideWord reads side-section word i, clamped into the buffer.
uint sideWord(uint i) {
    uint words = SIDE_LEN / 4u;
    if (i >= words) {
        if (DEBUG_BOUNDS != 0u) atomicAdd(status[pc.statusBase + 4u], 1u);
        i = words == 0u ? 0u : words - 1u;
    }
    return side[SIDE_BASE + i];
}

void report(uint b, uint c) {
    uint cls = b == STATUS_CORRUPT ? 1u : (b == STATUS_CHECKSUM ? 2u : 3u);
    atomicOr(status[pc.statusBase], b);
    atomicMin(status[pc.statusBase + cls], c);
}

// Two low bytes (bits 0-15) back into the low bytes of two BF16 values.
uint spreadLow2(uint l) { return (l & 0xFFu) | ((l & 0xFF00u) << 8); }

void main() {
    uint t = gl_LocalInvocationID.x;
#if PIECES
    if (autoIdle(FORMAT_ZF12, pc.segFirst, pc.segChunks)) return;
#endif
    if (pc.checksums != 0u) loadTables();
    barrier();

    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint nb = (m + ZF12_BLOCK - 1u) / ZF12_BLOCK;
#if PIECES
        uint aInfo, aOff, aNext;
        if (!autoPiece(FORMAT_ZF12, c, last, aInfo, aOff, aNext)) continue; // another kernel's chunk, or a bad entry
        uint lcB = (((m + 1u) / 2u) + 3u) & ~3u, llB = (m + 3u) & ~3u; // the piece's code and low streams
        uint fixedB = lcB + llB + 4u * HWORDS + 4u * CHUNK_ENTRY_WORDS;
        uint maxSide = ZF12_RAW_SIDE * (m / ZF12_BLOCK) + (m % ZF12_BLOCK != 0u ? blockSide(m % ZF12_BLOCK) : 0u);
        uint pieceB = aNext >= aOff ? 4u * (aNext - aOff) : 0u;
        if ((c == 0u && aOff != 0u) || aNext < aOff || aNext > pc.piecesLen / 4u || pieceB < fixedB
            || pieceB > fixedB + maxSide) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            continue;
        }
        uint codeW = pc.pieceBase + aOff;
        uint lowW = codeW + lcB / 4u;
        uint headW = lowW + llB / 4u;
        uint tabW = headW + HWORDS;
        gSideW = tabW + CHUNK_ENTRY_WORDS;
        gSideLen = pieceB - fixedB;
        if (t == 0u) {
            uint stored = table[pc.autoBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC];
            if (pc.checksums != 0u) {
                uint reg = shiftBy(TAB_M4, 0xFFFFFFFFu ^ aInfo);
                if ((shiftBy(TAB_M4, reg ^ aOff) ^ 0xFFFFFFFFu) != stored) report(STATUS_CHECKSUM, c);
            } else if (stored != 0u) {
                report(STATUS_NONCANONICAL, c);
            }
        }
#endif
        uint info = table[TAB_BASE + ENTRY_INFO];
        uint off = table[TAB_BASE + ENTRY_SIDE_OFF];
        uint next = NEXT_OFF;
        if (t == 0u) {
            carry = 0u;
            bad = 0u;
        }
        barrier();
        // Header bytes: a base or the raw mark for every block of the chunk (else the structure is broken), zero
        // after its last block (else not canonical); raw blocks counted before each block.
        for (uint b0 = 0u; b0 < 4u * HWORDS; b0 += WG) {
            uint b = b0 + t;
            uint h = b < 4u * HWORDS ? (heads[HEAD_BASE + b / 4u] >> (8u * (b % 4u))) & 0xFFu : 0u;
            if (b < nb && h > ZF12_MAX_BASE && h != ZF12_RAW_HEADER) atomicOr(bad, 1u);
            if (b >= nb && b < 4u * HWORDS && h != 0u) report(STATUS_NONCANONICAL, c);
            uint raw = b < nb && h == ZF12_RAW_HEADER ? 1u : 0u;
            if (b < BLOCKS) {
                hdr[b] = h;
                zero[b] = 0u;
                rmin[b] = ZF12_MAX_BASE;
                rmax[b] = 0u;
            }
            uint ex = subgroupExclusiveAdd(raw);
            uint tot = subgroupAdd(raw);
            if (subgroupElect()) sgX[gl_SubgroupID] = tot;
            barrier();
            uint base = carry, all = 0u;
            for (uint sg = 0u; sg < gl_NumSubgroups; sg++) {
                base += sg < gl_SubgroupID ? sgX[sg] : 0u;
                all += sgX[sg];
            }
            if (b < BLOCKS) before[b] = base + ex;
            barrier();
            if (t == 0u) carry += all;
            barrier();
        }
        uint k = carry;
        uint size = ZF12_RAW_SIDE * k;
        uint r = m % ZF12_BLOCK;
        if (r != 0u && hdr[nb - 1u] == ZF12_RAW_HEADER) size = size - ZF12_RAW_SIDE + blockSide(r);
        // Structure (docs/FORMAT.md §10.3). Neighbouring entries agreeing pairwise is the running-sum rule.
        bool corrupt = bad != 0u || info != k || (FIRST_CHUNK && off != 0u) || off > SIDE_LEN
            || size > SIDE_LEN - off || off + size != next;
        if (corrupt) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            if (DEBUG_BOUNDS == 0u) {
                barrier();
                continue;
            }
        }
        uint sw = off / 4u; // first side word

        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        for (uint j0 = 0u; j0 < ITERS; j0 += U) {
          uvec3 in3[U];
          [[unroll]] for (uint u = 0u; u < U; u++) {
            uint s = (j0 + u) * WG + t;
            uint v0 = 8u * s;
            in3[u] = uvec3(0u);
            if (v0 + 8u <= m && LOW_ALIGNED) {
                in3[u].x = codes[CODE_BASE + s];
                in3[u].yz = lowsv[LOWV_BASE + s];
            } else if (v0 < m) {
                in3[u].x = codes[CODE_BASE + s];
                in3[u].y = lows[LOW_BASE + 2u * s];
                if (v0 + 4u < m) in3[u].z = lows[LOW_BASE + 2u * s + 1u];
            }
          }
          [[unroll]] for (uint u = 0u; u < U; u++) {
            uint s = (j0 + u) * WG + t;
            uint v0 = 8u * s;
            uint cw = in3[u].x, lw0 = in3[u].y, lw1 = in3[u].z;
            if (pc.checksums != 0u) {
                aC = shiftBy(TAB_M4T, aC) ^ cw;
                aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
            }
            if (v0 >= m) continue;
            uint present = min(m - v0, 8u); // values of this slot inside the chunk
            uint vmask = present == 8u ? 0xFFFFFFFFu : (1u << (4u * present)) - 1u; // their nibbles
            uint blk = s / BSLOTS;
            uint h = hdr[blk];
            bool raw = h == ZF12_RAW_HEADER;
            uvec4 o;
            if (present < 8u) {
                uint lmask0 = present >= 4u ? 0xFFFFFFFFu : (1u << (8u * present)) - 1u;
                uint lmask1 = present <= 4u ? 0u : (1u << (8u * (present - 4u))) - 1u;
                if ((cw & ~vmask) != 0u || (lw0 & ~lmask0) != 0u || (lw1 & ~lmask1) != 0u)
                    report(STATUS_NONCANONICAL, c);
            }
            if (!raw) {
                // 8 nibbles: offsets d in bits 0-2, signs in bit 3. h + d per value, in byte lanes (no carries).
                uint d = cw & 0x77777777u;
                uint sg = cw & 0x88888888u;
                uint lo4 = d & 0x0F0F0F0Fu, hi4 = (d >> 4) & 0x0F0F0F0Fu; // values 0,2,4,6 and 1,3,5,7
                uint hh = h * 0x01010101u;
                uint f0 = lo4 + hh, f1 = hi4 + hh;
                if (((f0 | f1) & 0x80808080u) != 0u) report(STATUS_NONCANONICAL, c); // h + d > 127 (padding: d = 0)
                // A zero offset among the values present: a zero nibble-offset byte lane, masked to the present ones.
                uint z0 = ~((lo4 + 0x7F7F7F7Fu) | lo4) & 0x80808080u; // bit 7 set where d == 0 (d ≤ 7: no carries)
                uint z1 = ~((hi4 + 0x7F7F7F7Fu) | hi4) & 0x80808080u;
                uint pm0 = 0u, pm1 = 0u;
                for (uint q = 0u; q < 4u; q++) {
                    if (2u * q < present) pm0 |= 0x80u << (8u * q);
                    if (2u * q + 1u < present) pm1 |= 0x80u << (8u * q);
                }
                if (((z0 & pm0) | (z1 & pm1)) != 0u && zero[blk] == 0u) atomicOr(zero[blk], 1u);
                // High byte of value 2q: sign (bit 3 of nibble 2q) << 4 | f0 byte q; of value 2q+1 likewise.
                uint s0 = (sg & 0x08080808u) << 4, s1 = sg & 0x80808080u;
                uint h0 = s0 | f0, h1 = s1 | f1; // byte lane q: high byte of value 2q (h0) and 2q+1 (h1)
                for (uint q = 0u; q < 4u; q++) {
                    uint l = q < 2u ? (lw0 >> (16u * q)) & 0xFFFFu : (lw1 >> (16u * (q - 2u))) & 0xFFFFu;
                    o[q] = spreadLow2(l) | (((h0 >> (8u * q)) & 0xFFu) << 8) | (((h1 >> (8u * q)) & 0xFFu) << 24);
                }
            } else {
                // Raw: the high nibbles come from the side piece, 8 per word.
                uint sidx = before[blk] * BSLOTS + (s % BSLOTS);
                uint x = sideWord(sw + sidx);
                if ((x & ~vmask) != 0u) report(STATUS_NONCANONICAL, c); // side padding of a short block
                uint lo = ZF12_MAX_BASE, hi = 0u;
                for (uint q = 0u; q < 4u; q++) {
                    uint l = q < 2u ? (lw0 >> (16u * q)) & 0xFFFFu : (lw1 >> (16u * (q - 2u))) & 0xFFFFu;
                    uint ha = ((x >> (8u * q)) & 15u) << 4 | ((cw >> (8u * q)) & 15u);
                    uint hb = ((x >> (8u * q + 4u)) & 15u) << 4 | ((cw >> (8u * q + 4u)) & 15u);
                    o[q] = spreadLow2(l) | (ha << 8) | (hb << 24);
                    if (2u * q < present) { lo = min(lo, ha & 0x7Fu); hi = max(hi, ha & 0x7Fu); }
                    if (2u * q + 1u < present) { lo = min(lo, hb & 0x7Fu); hi = max(hi, hb & 0x7Fu); }
                }
                atomicMin(rmin[blk], lo);
                atomicMax(rmax[blk], hi);
            }
            uint ow = (lc * N + v0) / 2u;
            if (present == 8u) {
                dstv[pc.dstBase + ow / 4u] = o;
            } else {
                for (uint q = 0u; 2u * q < present; q++) dstw[4u * pc.dstBase + ow + q] = o[q];
            }
          }
        }
        barrier();
        // Per block: a coded block's base must be its smallest field, a raw block's fields must not fit.
        for (uint b = t; b < nb; b += WG) {
            bool rawb = hdr[b] == ZF12_RAW_HEADER;
            if (!rawb && zero[b] == 0u) report(STATUS_NONCANONICAL, c);
            if (rawb && rmax[b] - rmin[b] <= ZF12_SPAN) report(STATUS_NONCANONICAL, c);
        }

        // Checksum: the dense pieces from the per-thread Horner sums, then info, offset, headers and side piece.
        if (pc.checksums != 0u) {
            uint xC = subgroupXor(mulmod(aC, consts[CONST_KC + t]));
            uint xL = subgroupXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
            if (subgroupElect()) {
                sgX[2u * gl_SubgroupID] = xC;
                sgX[2u * gl_SubgroupID + 1u] = xL;
            }
            barrier();
            uint linD = 0u;
            if (t == 0u) {
                uint linC = 0u, linL = 0u;
                for (uint s = 0u; s < gl_NumSubgroups; s++) {
                    linC ^= sgX[2u * s];
                    linL ^= sgX[2u * s + 1u];
                }
                if (last) {
                    linC = mulmod(linC, pc.invC);
                    linL = mulmod(linL, pc.invL);
                }
                linD = (last ? mulmod(linC, pc.shLowLast) : shiftBy(TAB_ML, linC)) ^ linL;
            }
            barrier();
            uint words = 2u + HWORDS + size / 4u;
            uint reg = 0xFFFFFFFFu;
            if (words <= SERIAL_MAX) {
                if (t == 0u) {
                    for (uint q = 0u; q < words; q++) {
                        uint w = q == 0u ? info : (q == 1u ? off : (q < 2u + HWORDS
                            ? heads[HEAD_BASE + q - 2u] : sideWord(sw + q - 2u - HWORDS)));
                        reg = shiftBy(TAB_M4, reg ^ w);
                    }
                }
            } else {
                // Zeros in front up to a multiple of WG, the initial register folded into the first word (as in
                // sz4_decode.glsl): the threads' terms sum to the register, no multiplications after.
                uint iters = (words + WG - 1u) / WG, pad = iters * WG - words;
                uint a = 0u;
                for (uint j = 0u; j < iters; j++) {
                    uint q = j * WG + t, r = q - pad;
                    uint w = q < pad ? 0u : (r == 0u ? ~info : (r == 1u ? off : (r < 2u + HWORDS
                        ? heads[HEAD_BASE + r - 2u] : sideWord(sw + r - 2u - HWORDS))));
                    a = shiftBy(TAB_M4T, a) ^ w;
                }
                uint x = subgroupXor(mulmod(a, consts[CONST_KC + t]));
                if (subgroupElect()) sgX[gl_SubgroupID] = x;
                barrier();
                if (t == 0u) {
                    reg = 0u;
                    for (uint s = 0u; s < gl_NumSubgroups; s++) reg ^= sgX[s];
                }
            }
            if (t == 0u) {
                uint crc = (last ? mulmod(reg, pc.kdLast) : shiftBy(TAB_ML, shiftBy(TAB_MC, reg))) ^ linD ^ 0xFFFFFFFFu;
                if (crc != table[TAB_BASE + ENTRY_CRC]) report(STATUS_CHECKSUM, c);
            }
        } else if (t == 0u && table[TAB_BASE + ENTRY_CRC] != 0u) {
            report(STATUS_NONCANONICAL, c);
        }
        barrier();
    }
}
