#version 450
// auto encode of BF16, pass 2 of 2 (docs/FORMAT.md §11, §10): the zf12 pieces. One workgroup per chunk whose pass 1
// choice is zf12 (grid-stride; others are skipped) codes the chunk as a one-chunk zf12 body directly at its piece
// offset in the auto body: code and low pieces, the header piece pass 1 found, the table entry, the side piece (the
// raw blocks' high nibbles), the chunk's CRC-32C, and the auto table entry. The chunk's values are read once here.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_AUTO_ZF12
#include "contracts.glsl"
#include "auto_common.glsl"
#include "common.glsl"
#define CRC_SHARED_HOT
#include "crc_tables.glsl"
#include "auto_crc.glsl"

const uint ITERS = SLOTS / WG; // slots per invocation (WG divides SLOTS: the host checks)
shared uint hdr[ZF_BLOCKS];    // header byte of each block: base, or ZF12_RAW_HEADER
shared uint before[ZF_BLOCKS]; // raw blocks before each block in the chunk

// The low byte of the two values in a word, packed into the low 16 bits.
uint lowBytes2(uint w) { return (w & 0xFFu) | ((w >> 8) & 0xFF00u); }

uint sideW, metaH; // words of the chunk's side piece in out and of its header piece in meta
#define HEAD_WORD(q) ((q) < ZF_HWORDS ? meta[metaH + (q)] : outw[sideW + (q) - ZF_HWORDS])

void main() {
    uint t = gl_LocalInvocationID.x;
    uint C = pc.chunks;
    bool ready = false;
    for (uint i = gl_WorkGroupID.x; i < C; i += gl_NumWorkGroups.x) {
        uint c = C - 1u - i; // the last chunks first: pass 1 read them last, so some may still be cached
        if (work[2u * C + 1u + c] != FORMAT_ZF12) continue; // uniform: one chunk per workgroup
        if (!ready) { // a workgroup with none of its format's chunks leaves without loading tables
            loadTables();
            ready = true;
        }
        bool last = c == C - 1u;
        uint m = last ? pc.lastLen : N;
        uint info = meta[c];
        uint off = pieceOffset(c, C);
        uint codeW = align4((m + 1u) / 2u) / 4u, lowW = align4(m) / 4u;
        uint cBase = pc.outBase + CHUNK_ENTRY_WORDS * C + off / 4u;
        uint lBase = cBase + codeW;
        uint hBase = lBase + lowW;
        uint eBase = hBase + ZF_HWORDS;
        sideW = eBase + CHUNK_ENTRY_WORDS;
        metaH = C + c * ZF_HWORDS;
        for (uint b = t; b < ZF_BLOCKS; b += WG) hdr[b] = (meta[metaH + b / 4u] >> (8u * (b % 4u))) & 0xFFu;
        for (uint q = t; q < ZF_HWORDS; q += WG) outw[hBase + q] = meta[metaH + q];
        barrier();
        if (t == 0u) {
            uint n = 0u;
            for (uint b = 0u; b < ZF_BLOCKS; b++) {
                before[b] = n;
                n += hdr[b] == ZF12_RAW_HEADER ? 1u : 0u;
            }
        }
        barrier();
        uint sideWords = 0u; // full raw blocks take 256 bytes; only the tensor's last block can be short
        if (info != 0u) {
            uint lb = (m - 1u) / ZF12_BLOCK;
            sideWords = (ZF12_RAW_SIDE / 4u) * (info - 1u) +
                (hdr[lb] == ZF12_RAW_HEADER ? zfBlockSide(m - lb * ZF12_BLOCK) : ZF12_RAW_SIDE) / 4u;
        }

        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        for (uint j = 0u; j < ITERS; j += U) {
            // U slots loaded first (slot j+u of every invocation is contiguous across the workgroup), then coded.
            uvec4 xs[U];
            uint vs[U];
            [[unroll]] for (uint u = 0u; u < U; u++) xs[u] = loadSlot(c, (j + u) * WG + t, m, vs[u]);
            [[unroll]] for (uint u = 0u; u < U; u++) {
                uint s = (j + u) * WG + t, v0 = 8u * s;
                uint valid = vs[u];
                uvec4 x = xs[u];
                uint blk = s / ZF_BSLOTS;
                uint h = hdr[blk];
                bool rawB = h == ZF12_RAW_HEADER;
                uint cw = 0u, sw = 0u;
                [[unroll]] for (uint b = 0u; b < 8u; b++) {
                    uint hb = (x[b >> 1] >> (8u + 16u * (b & 1u))) & 0xFFu;
                    uint nib = rawB ? (hb & 15u) : (((hb >> 4) & 8u) | ((hb & 0x7Fu) - h));
                    if ((valid & (1u << b)) == 0u) nib = 0u;
                    cw |= nib << (4u * b);
                    sw |= (hb >> 4) << (4u * b);
                }
                uint lw0 = lowBytes2(x.x) | (lowBytes2(x.y) << 16);
                uint lw1 = lowBytes2(x.z) | (lowBytes2(x.w) << 16);
                if (v0 < m) {
                    outw[cBase + s] = cw;
                    storePair(lBase + 2u * s, lw0, lw1, v0 + 4u < m);
                    // Values past the end are zero, so their side nibbles are the padding the format wants.
                    if (rawB) outw[sideW + before[blk] * ZF_BSLOTS + (s % ZF_BSLOTS)] = sw;
                }
                if (pc.checksums != 0u) {
                    aC = shiftBy(TAB_M4T, aC) ^ cw;
                    aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                    aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
                }
            }
        }
        memoryBarrierBuffer();
        barrier();
        uint crc = 0u;
        if (pc.checksums != 0u) {
            // Linear CRC of code piece || low piece from the per-invocation registers (as zf12_encode).
            uint linC = wgXor(mulmod(aC, consts[CONST_KC + t]));
            uint linL = wgXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
            uint linD = 0u;
            if (t == 0u) {
                if (last) {
                    linC = mulmod(linC, pc.invC);
                    linL = mulmod(linL, pc.invL);
                }
                linD = (last ? mulmod(linC, pc.shLowLast) : shiftBy(TAB_ML, linC)) ^ linL;
            }
            HEAD_CRC(crc, info, ZF_HWORDS + sideWords, 4u * (codeW + lowW), linD);
        }
        if (t == 0u) {
            outw[eBase + ENTRY_INFO] = info;
            outw[eBase + ENTRY_SIDE_OFF] = 0u;
            outw[eBase + ENTRY_CRC] = crc;
            uint aInfo = FORMAT_ZF12 << KIND_SHIFT, aOff = off / 4u;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = aInfo;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_SIDE_OFF] = aOff;
            outw[pc.outBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = pc.checksums != 0u ? autoEntryCRC(aInfo, aOff) : 0u;
            if (last) work[2u * C] = off + work[c]; // the pieces' total, which the host reads back
        }
        barrier(); // hdr and before are free for the next chunk
    }
}
