// SplitZip-4 decode: one workgroup per chunk (grid-stride), one pass. Each chunk checks its table entry against its
// neighbour's (so the table is validated without a prefix sum), decodes its values, applies its escapes, checks the
// canonical-form rules and verifies its CRC-32C, reporting problems as status bits and the lowest chunk per class.
// Every index derived from payload data is bounded before use: no payload can make this kernel read or write
// outside its buffers.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#include "contracts.glsl" // the kernel's declarations (KERNEL_<NAME>: its .comp)
const uint N = 1u << SHIFT;
const uint SLOTS = N / 8u;
const uint ITERS = SLOTS / WG;
const uint SERIAL_MAX = 64u;

#include "slot_streams.glsl"
#if !PIECES
// A prepared block decode learns each run's side length from its status words, written by the host before the run.
uint gSideLen;
#define NEXT_OFF last ? gSideLen : table[pc.tableBase + (c + 1u) * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF]
#define SIDE_LEN gSideLen
#endif

#include "common.glsl"
#if PIECES
#include "auto_pieces.glsl"
#endif
#include "decode_slots.glsl"
#define CRC_SHARED_HOT
#include "crc_tables.glsl"
#if PIECES
#include "auto_piece_crc.glsl"
#endif

shared uint pairExp[256]; // code byte -> exponent bits of its two values
shared uint lut[256];     // exponent -> 1 if the codebook has it
shared uint escs[ESC_CAP];
shared uint sgX[2u * WG];

uint rawSide(uint m) { return ((m / 2u) + 3u) & ~3u; }

uint cbExp(uint i) { return (pc.cb[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu; }

// sideWord reads side-section word i, clamped into the buffer.
uint sideWord(uint i) {
    uint words = SIDE_LEN / 4u;
    if (i >= words) {
        if (DEBUG_BOUNDS != 0u) atomicAdd(status[pc.statusBase + 4u], 1u);
        i = words == 0u ? 0u : words - 1u;
    }
    return side[SIDE_BASE + i];
}

// escAt is escape i of a coded chunk's k: staged in shared memory, or read in place when there are too many.
uint escAt(uint i, uint k, uint sw) { return k <= ESC_CAP ? escs[i] : sideWord(sw + i); }

void report(uint bit, uint c) {
    uint cls = bit == STATUS_CORRUPT ? 1u : (bit == STATUS_CHECKSUM ? 2u : 3u);
    atomicOr(status[pc.statusBase], bit);
    atomicMin(status[pc.statusBase + cls], c);
}

void main() {
    uint t = gl_LocalInvocationID.x;
#if !PIECES
    gSideLen = pc.sideLen == SIDE_LEN_RUNTIME ? status[pc.statusBase + STATUS_SIDE_LEN] : pc.sideLen;
#else
    if (autoIdle(FORMAT_SPLITZIP4, pc.segFirst, pc.segChunks)) return;
#endif
    if (pc.checksums != 0u) loadTables();
    for (uint b = t; b < 256u; b += WG) {
        pairExp[b] = (cbExp(b & 15u) << 7) | (cbExp(b >> 4) << 23);
        uint has = 0u;
        for (uint i = 0u; i < 16u; i++) has |= cbExp(i) == b ? 1u : 0u;
        lut[b] = has;
    }
    barrier();

    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
#if PIECES
        uint aInfo, aOff, aNext;
        if (!autoPiece(FORMAT_SPLITZIP4, c, last, aInfo, aOff, aNext)) continue; // another kernel's chunk, or a bad entry
        uint lcB = (((m + 1u) / 2u) + 3u) & ~3u, llB = (m + 3u) & ~3u; // the piece's code and low streams
        uint fixedB = lcB + llB + 4u * CHUNK_ENTRY_WORDS;
        uint pieceB = aNext >= aOff ? 4u * (aNext - aOff) : 0u;
        if ((c == 0u && aOff != 0u) || aNext < aOff || aNext > pc.piecesLen / 4u || pieceB < fixedB
            || pieceB > fixedB + rawSide(m)) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            continue;
        }
        uint codeW = pc.pieceBase + aOff;
        uint lowW = codeW + lcB / 4u;
        uint tabW = lowW + llB / 4u;
        gSideW = tabW + CHUNK_ENTRY_WORDS;
        gSideLen = pieceB - fixedB;
        autoPieceCRC(c, aInfo, aOff);
#endif
        uint info = table[TAB_BASE + ENTRY_INFO];
        uint off = table[TAB_BASE + ENTRY_SIDE_OFF];
        uint kind = info >> KIND_SHIFT;
        uint k = info & COUNT_MASK;
        uint next = NEXT_OFF;
        uint size = kind == CHUNK_RAW ? rawSide(m) : ESCAPE_SIZE * k;
        barrier();
        // Structure (docs/FORMAT.md §5.3). Neighbouring entries agreeing pairwise is the running-sum rule.
        bool corrupt = kind > CHUNK_RAW || (kind == CHUNK_RAW && k != 0u) || k > m || (FIRST_CHUNK && off != 0u)
            || off > SIDE_LEN || size > SIDE_LEN - off || off + size != next;
        if (corrupt) {
            if (t == 0u) report(STATUS_CORRUPT, c);
            if (DEBUG_BOUNDS == 0u) {
                barrier();
                continue;
            }
            k = min(k, m);
        }
        bool raw = kind == CHUNK_RAW;
        uint sw = off / 4u; // first side word
        if (!raw) {
            if (ESCAPE_SIZE * k >= rawSide(m) && t == 0u) report(STATUS_NONCANONICAL, c);
            // Stage the escapes and check each against the rules of §5.7.
            for (uint i = t; i < k; i += WG) {
                uint w = sideWord(sw + i);
                if (k <= ESC_CAP) escs[i] = w;
                uint pos = w & ESCAPE_POS_MASK;
                bool bad = (w >> 24) != 0u || pos >= m || lut[(w >> ESCAPE_EXP_SHIFT) & 0xFFu] != 0u
                    || (i > 0u && pos <= (sideWord(sw + i - 1u) & ESCAPE_POS_MASK));
                if (bad) report(STATUS_NONCANONICAL, c);
            }
        }
        barrier();

        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        uint rawEsc = 0u;
        for (uint j0 = 0u; j0 < ITERS; j0 += U) {
          // Load U slots first (slot j of every thread is contiguous across the workgroup), then decode them.
          uvec3 in3[U];
          [[unroll]] for (uint u = 0u; u < U; u++) in3[u] = loadSlot((j0 + u) * WG + t, m, CODE_BASE, LOW_BASE, LOWV_BASE, LOW_ALIGNED);
          [[unroll]] for (uint u = 0u; u < U; u++) {
            uint j = j0 + u;
            uint s = j * WG + t;
            uint v0 = 8u * s;
            uint cw = in3[u].x, lw0 = in3[u].y, lw1 = in3[u].z;
            if (pc.checksums != 0u) {
                aC = shiftBy(TAB_M4T, aC) ^ cw;
                aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
            }
            if (v0 >= m || raw) continue; // raw chunks are decoded by their own loop below
            uint present = min(m - v0, 8u); // values of this slot inside the chunk
            uvec4 o;
            // Padding after the last value must be zero, in both streams.
            if (present < 8u) {
                uint nmask = (1u << (4u * present)) - 1u;
                uint lmask0 = present >= 4u ? 0xFFFFFFFFu : (1u << (8u * present)) - 1u;
                uint lmask1 = present <= 4u ? 0u : (1u << (8u * (present - 4u))) - 1u;
                if ((cw & ~nmask) != 0u || (lw0 & ~lmask0) != 0u || (lw1 & ~lmask1) != 0u)
                    report(STATUS_NONCANONICAL, c);
            }
            o = uvec4(pairExp[cw & 0xFFu], pairExp[(cw >> 8) & 0xFFu], pairExp[(cw >> 16) & 0xFFu], pairExp[cw >> 24]);
            o |= uvec4(spread2(lw0 & 0xFFFFu), spread2(lw0 >> 16), spread2(lw1 & 0xFFFFu), spread2(lw1 >> 16));
            uint ow = (lc * N + v0) / 2u;
            if (present == 8u) {
                dstv[pc.dstBase + ow / 4u] = o;
            } else {
                for (uint q = 0u; 2u * q < present; q++) dstw[4u * pc.dstBase + ow + q] = o[q];
            }
          }
        }
        if (raw) {
            // Raw: exponent bytes, the first h in the code piece, the rest in the side piece.
            uint h = (m + 1u) / 2u;
            for (uint j = 0u; j < ITERS; j++) {
                uint s = j * WG + t;
                uint v0 = 8u * s;
                if (v0 >= m) continue;
                uint present = min(m - v0, 8u);
                uint lw0 = lows[LOW_BASE + 2u * s];
                uint lw1 = v0 + 4u < m ? lows[LOW_BASE + 2u * s + 1u] : 0u;
                uvec4 o = uvec4(spread2(lw0 & 0xFFFFu), spread2(lw0 >> 16), spread2(lw1 & 0xFFFFu), spread2(lw1 >> 16));
                for (uint b = 0u; b < present; b++) {
                    uint v = v0 + b;
                    uint e = v < h ? (codes[CODE_BASE + v / 4u] >> (8u * (v & 3u))) & 0xFFu
                                   : (sideWord(sw + (v - h) / 4u) >> (8u * ((v - h) & 3u))) & 0xFFu;
                    rawEsc += 1u - lut[e];
                    o[b >> 1] |= e << (7u + 16u * (b & 1u));
                }
                if (present < 8u) {
                    uint lmask0 = present >= 4u ? 0xFFFFFFFFu : (1u << (8u * present)) - 1u;
                    uint lmask1 = present <= 4u ? 0u : (1u << (8u * (present - 4u))) - 1u;
                    if ((lw0 & ~lmask0) != 0u || (lw1 & ~lmask1) != 0u) report(STATUS_NONCANONICAL, c);
                }
                uint ow = (lc * N + v0) / 2u;
                if (present == 8u) {
                    dstv[pc.dstBase + ow / 4u] = o;
                } else {
                    for (uint q = 0u; 2u * q < present; q++) dstw[4u * pc.dstBase + ow + q] = o[q];
                }
            }
        }
        if (raw) {
            // Padding of the raw pieces, and whether the chunk should have been coded.
            uint h = (m + 1u) / 2u;
            uint pieceWords = last ? (h + 3u) / 4u : N / 8u;
            for (uint q = t; q < pieceWords; q += WG) {
                uint w = codes[CODE_BASE + q];
                for (uint b = 0u; b < 4u; b++)
                    if (4u * q + b >= h && ((w >> (8u * b)) & 0xFFu) != 0u) report(STATUS_NONCANONICAL, c);
            }
            for (uint q = t; q < rawSide(m) / 4u; q += WG) {
                uint w = sideWord(sw + q);
                for (uint b = 0u; b < 4u; b++)
                    if (4u * q + b >= m - h && ((w >> (8u * b)) & 0xFFu) != 0u) report(STATUS_NONCANONICAL, c);
            }
            rawEsc = subgroupAdd(rawEsc);
            if (subgroupElect()) sgX[gl_SubgroupID] = rawEsc;
            barrier();
            if (t == 0u) {
                uint total = 0u;
                for (uint s = 0u; s < gl_NumSubgroups; s++) total += sgX[s];
                if (ESCAPE_SIZE * total < rawSide(m)) report(STATUS_NONCANONICAL, c);
            }
            barrier();
        }

        // Escapes are patched in after the dense pass, one invocation per escape: looking for them in every slot
        // cost ~10 % of the decoder's time for a handful of values per chunk. An escaped value's code is 0, so the
        // dense pass wrote codebook[0] there; a buffer barrier orders that store before the patch's. It is the
        // checksum's barrier too, after the checksum's sums, so the dense stores have drained meanwhile; the first
        // round's reads (its escape, code word and low word: inputs, not the output) are issued before all that.
        bool doPatch = !raw && k > 0u;
        uint wF = 0u, cwF = 0u, lwF = 0u;
        if (doPatch && t < k) {
            wF = escAt(t, k, sw);
            uint p = min(wF & ESCAPE_POS_MASK, m - 1u);
            cwF = codes[CODE_BASE + p / 8u];
            lwF = lows[LOW_BASE + p / 4u];
        }

        // Checksum: the dense pieces from the per-thread Horner sums, then the header and side piece. The
        // header-and-side register is folded while the other subgroups finish their sums, from the staged escapes
        // where they are staged (read from the side buffer, each step waited for an L2 load).
        bool crcOn = pc.checksums != 0u;
        uint stored = 0u, words = 0u, reg = 0xFFFFFFFFu, nsg = gl_NumSubgroups;
        if (crcOn) {
            // The chunk's entry is re-read here rather than kept in registers through the main loop: fewer live
            // registers, more resident workgroups. The loads go first so that their latency overlaps the sums.
            info = table[TAB_BASE + ENTRY_INFO];
            off = table[TAB_BASE + ENTRY_SIDE_OFF];
            stored = table[TAB_BASE + ENTRY_CRC];
            uint xC = subgroupXor(mulmod(aC, consts[CONST_KC + t]));
            uint xL = subgroupXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
            size = raw ? rawSide(m) : ESCAPE_SIZE * (info & COUNT_MASK);
            sw = off / 4u;
            bool staged = !raw && !corrupt && k <= ESC_CAP; // side word i is escs[i]
            words = 2u + size / 4u;
            if (words <= SERIAL_MAX) {
                if (t == 0u) {
                    for (uint q = 0u; q < words; q++) {
                        uint w = q == 0u ? info : (q == 1u ? off : (staged ? escs[q - 2u] : sideWord(sw + q - 2u)));
                        reg = shiftBy(TAB_M4, reg ^ w);
                    }
                }
            } else {
                // In parallel, Horner per thread, the words padded with zeros in front to a multiple of WG (leading
                // zeros leave a linear CRC unchanged) and the initial register folded into the first word: the sum
                // of the threads' terms is the register itself, with no shifts by powers of x after it (a chain of
                // multiplications by one thread while the others wait).
                uint iters = (words + WG - 1u) / WG, pad = iters * WG - words;
                uint a = 0u;
                for (uint j = 0u; j < iters; j++) {
                    uint q = j * WG + t;
                    uint w = q < pad ? 0u : (q == pad ? ~info : (q == pad + 1u ? off
                        : (staged ? escs[q - pad - 2u] : sideWord(sw + q - pad - 2u))));
                    a = shiftBy(TAB_M4T, a) ^ w;
                }
                uint x = subgroupXor(mulmod(a, consts[CONST_KC + t]));
                if (subgroupElect()) sgX[2u * nsg + gl_SubgroupID] = x;
            }
            if (subgroupElect()) {
                sgX[2u * gl_SubgroupID] = xC;
                sgX[2u * gl_SubgroupID + 1u] = xL;
            }
        }
        if (doPatch) memoryBarrierBuffer();
        barrier();
        if (crcOn && t == 0u) {
            uint linC = 0u, linL = 0u;
            for (uint s = 0u; s < nsg; s++) {
                linC ^= sgX[2u * s];
                linL ^= sgX[2u * s + 1u];
            }
            if (words > SERIAL_MAX) {
                reg = 0u; // the terms' XOR is the register, its initial value folded in
                for (uint s = 0u; s < nsg; s++) reg ^= sgX[2u * nsg + s];
            }
            if (last) {
                linC = mulmod(linC, pc.invC);
                linL = mulmod(linL, pc.invL);
            }
            uint linD = (last ? mulmod(linC, pc.shLowLast) : shiftBy(TAB_ML, linC)) ^ linL;
            uint crc = (last ? mulmod(reg, pc.kdLast) : shiftBy(TAB_ML, shiftBy(TAB_MC, reg))) ^ linD ^ 0xFFFFFFFFu;
            if (crc != stored) report(STATUS_CHECKSUM, c);
        } else if (t == 0u && pc.checksums == 0u && table[TAB_BASE + ENTRY_CRC] != 0u) {
            report(STATUS_NONCANONICAL, c);
        }
        if (doPatch) {
            for (uint i = t; i < k; i += WG) {
                uint w = i == t ? wF : escAt(i, k, sw);
                uint p = w & ESCAPE_POS_MASK;
                if (p >= m) continue; // non-canonical, reported when the escapes were staged
                uint cwp = i == t ? cwF : codes[CODE_BASE + p / 8u]; // the code word of p and of its pair p ^ 1
                if (((cwp >> (4u * (p & 7u))) & 15u) != 0u) report(STATUS_NONCANONICAL, c);
                // The other value of the 32-bit output word: an escape too (the neighbouring list entry), or coded.
                uint q = p ^ 1u;
                uint eq = cbExp((cwp >> (4u * (q & 7u))) & 15u);
                uint j = (p & 1u) == 0u ? i + 1u : i - 1u; // i - 1 wraps past k when i = 0
                if (j < k) {
                    uint wj = escAt(j, k, sw);
                    if ((wj & ESCAPE_POS_MASK) == q) eq = (wj >> ESCAPE_EXP_SHIFT) & 0xFFu;
                }
                uint ep = (w >> ESCAPE_EXP_SHIFT) & 0xFFu;
                uint lw = i == t ? lwF : lows[LOW_BASE + p / 4u];
                uint lp = (lw >> (8u * (p & 3u))) & 0xFFu, lq = (lw >> (8u * (q & 3u))) & 0xFFu;
                uint vp = ((lp & 0x80u) << 8) | (ep << 7) | (lp & 0x7Fu);
                uint vq = ((lq & 0x80u) << 8) | (eq << 7) | (lq & 0x7Fu);
                dstw[4u * pc.dstBase + (lc * N + (p & ~1u)) / 2u] = (p & 1u) == 0u ? vp | (vq << 16) : vq | (vp << 16);
            }
        }
        barrier();
    }
}
