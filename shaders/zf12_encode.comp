#version 450
// zf12 encode, pass 1 of 3 (docs/FORMAT.md §10): one workgroup per chunk (grid-stride). It finds every block's
// field range, writes the chunk's code, low and header pieces at their fixed offsets and raw blocks' side nibbles
// to a per-chunk scratch slot, and stores the table's info word (raw blocks), the linear CRC of the dense pieces
// (in the CRC word, finished by pass 3) and the chunk's side size into a per-64-chunk block sum for pass 2's
// prefix sum (sz4_scan, shared with SplitZip-4).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require

#include "layout.glsl"

#define KERNEL_ZF12_ENCODE
#include "contracts.glsl"
const uint N = 1u << SHIFT;
const uint SLOTS = N / 8u;                     // 8 values per slot
const uint ITERS = SLOTS / WG;                 // slots per thread
const uint SCRATCH = N / 8u;                   // scratch words per chunk: every block raw
const uint BLOCKS = N / ZF12_BLOCK;            // blocks per full chunk
const uint HWORDS = (BLOCKS + 3u) / 4u;        // header words per chunk
const uint BSLOTS = ZF12_BLOCK / 8u;           // slots per block

#include "common.glsl"
#include "crc_tables.glsl"

shared uint bmin[BLOCKS];   // smallest field of each block
shared uint bmax[BLOCKS];   // largest
shared uint hdr[BLOCKS];    // header byte: base, or ZF12_RAW_HEADER
shared uint before[BLOCKS]; // raw blocks before this one in the chunk
shared uint sgSum[WG];
shared uint sgX[2u * WG];
shared uint carry;

// The low byte of the two values in a word, packed into the low 16 bits.
uint lowBytes2(uint w) { return (w & 0xFFu) | ((w >> 8) & 0xFF00u); }

// side bytes of a raw block of mb values: its high nibbles, padded to 4
uint blockSide(uint mb) { return (((mb + 1u) / 2u) + 3u) & ~3u; }

// loadSlot reads slot s (8 values) of segment chunk lc, zeroing values at or past m; valid gets a bit per value.
uvec4 loadSlot(uint lc, uint s, uint m, out uint valid) {
    uint v0 = 8u * s;
    uvec4 x = uvec4(0u);
    valid = 0u;
    if (v0 + 8u <= m) {
        x = srcv[pc.srcBase + lc * SLOTS + s];
        valid = 0xFFu;
    } else if (v0 < m) {
        for (uint q = 0u; q < 4u; q++) {
            if (v0 + 2u * q < m) x[q] = srcw[4u * pc.srcBase + (lc * N + v0) / 2u + q];
        }
        valid = (1u << (m - v0)) - 1u;
        for (uint q = 0u; q < 4u; q++) {
            uint keep = ((valid >> (2u * q)) & 1u) * 0xFFFFu | ((valid >> (2u * q + 1u)) & 1u) * 0xFFFF0000u;
            x[q] &= keep;
        }
    }
    return x;
}

void main() {
    uint t = gl_LocalInvocationID.x;
    loadTables();
    barrier();

    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint nb = (m + ZF12_BLOCK - 1u) / ZF12_BLOCK;
        for (uint b = t; b < BLOCKS; b += WG) {
            bmin[b] = ZF12_MAX_BASE;
            bmax[b] = 0u;
        }
        if (t == 0u) carry = 0u;
        barrier();
        // Field range of every block. Lanes of a subgroup mostly share a block: reduce there first.
        for (uint j = 0u; j < ITERS; j++) {
            uint s = j * WG + t;
            uint valid;
            uvec4 x = loadSlot(lc, s, m, valid);
            uint lo = ZF12_MAX_BASE, hi = 0u;
            for (uint b = 0u; b < 8u; b++) {
                if ((valid & (1u << b)) != 0u) {
                    uint f = (x[b >> 1] >> (8u + 16u * (b & 1u))) & 0x7Fu;
                    lo = min(lo, f);
                    hi = max(hi, f);
                }
            }
            uint blk = s / BSLOTS;
            if (subgroupAllEqual(blk)) {
                lo = subgroupMin(lo);
                hi = subgroupMax(hi);
                if (subgroupElect()) {
                    atomicMin(bmin[blk], lo);
                    atomicMax(bmax[blk], hi);
                }
            } else {
                atomicMin(bmin[blk], lo);
                atomicMax(bmax[blk], hi);
            }
        }
        barrier();
        // Headers, and every block's count of raw blocks before it (a workgroup prefix sum, WG blocks at a time).
        for (uint b0 = 0u; b0 < BLOCKS; b0 += WG) {
            uint b = b0 + t;
            uint raw = b < nb && bmax[b] - bmin[b] > ZF12_SPAN ? 1u : 0u;
            if (b < BLOCKS) hdr[b] = b >= nb ? 0u : (raw != 0u ? ZF12_RAW_HEADER : bmin[b]);
            uint ex = subgroupExclusiveAdd(raw);
            uint tot = subgroupAdd(raw);
            if (subgroupElect()) sgSum[gl_SubgroupID] = tot;
            barrier();
            uint base = carry, all = 0u;
            for (uint sg = 0u; sg < gl_NumSubgroups; sg++) {
                base += sg < gl_SubgroupID ? sgSum[sg] : 0u;
                all += sgSum[sg];
            }
            if (b < BLOCKS) before[b] = base + ex;
            barrier();
            if (t == 0u) carry += all;
            barrier();
        }
        uint k = carry; // raw blocks in the chunk

        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        for (uint j = 0u; j < ITERS; j += U) {
            uvec4 xs[U];
            uint valid[U];
            [[unroll]] for (uint u = 0u; u < U; u++) xs[u] = loadSlot(lc, (j + u) * WG + t, m, valid[u]);
            [[unroll]] for (uint u = 0u; u < U; u++) {
                uint s = (j + u) * WG + t;
                uint v0 = 8u * s;
                uvec4 x = xs[u];
                uint blk = s / BSLOTS;
                uint h = hdr[blk];
                bool raw = h == ZF12_RAW_HEADER;
                uint cw = 0u, sw = 0u;
                for (uint b = 0u; b < 8u; b++) {
                    uint hb = (x[b >> 1] >> (8u + 16u * (b & 1u))) & 0xFFu;
                    uint nib = raw ? (hb & 15u) : (((hb >> 4) & 8u) | ((hb & 0x7Fu) - h));
                    if ((valid[u] & (1u << b)) == 0u) nib = 0u;
                    cw |= nib << (4u * b);
                    sw |= (hb >> 4) << (4u * b);
                }
                uint lw0 = lowBytes2(x.x) | (lowBytes2(x.y) << 16);
                uint lw1 = lowBytes2(x.z) | (lowBytes2(x.w) << 16);
                if (v0 + 8u <= m && (pc.lowBase & 1u) == 0u) {
                    codes[pc.codeBase + lc * SLOTS + s] = cw;
                    lowsv[pc.lowBase / 2u + lc * (N / 8u) + s] = uvec2(lw0, lw1);
                } else if (v0 < m) {
                    codes[pc.codeBase + lc * SLOTS + s] = cw;
                    lows[pc.lowBase + lc * (N / 4u) + 2u * s] = lw0;
                    if (v0 + 4u < m) lows[pc.lowBase + lc * (N / 4u) + 2u * s + 1u] = lw1;
                }
                // Values past the end are zero, so their side nibbles are the padding the format wants.
                if (raw && v0 < m) scratch[lc * SCRATCH + before[blk] * BSLOTS + (s % BSLOTS)] = sw;
                if (pc.checksums != 0u) {
                    aC = shiftBy(TAB_M4T, aC) ^ cw;
                    aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                    aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
                }
            }
        }
        for (uint q = t; q < HWORDS; q += WG) {
            uint w = 0u;
            for (uint b = 0u; b < 4u; b++) {
                if (4u * q + b < BLOCKS) w |= hdr[4u * q + b] << (8u * b);
            }
            heads[pc.headBase + lc * HWORDS + q] = w;
        }
        // Linear CRC of code piece || low piece: per-thread Horner results shifted into place, XORed together.
        uint xC = 0u, xL = 0u;
        if (pc.checksums != 0u) {
            xC = mulmod(aC, consts[CONST_KC + t]);
            xL = mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]);
        }
        xC = subgroupXor(xC);
        xL = subgroupXor(xL);
        if (subgroupElect()) {
            sgX[2u * gl_SubgroupID] = xC;
            sgX[2u * gl_SubgroupID + 1u] = xL;
        }
        barrier();
        if (t == 0u) {
            uint linC = 0u, linL = 0u;
            for (uint i = 0u; i < gl_NumSubgroups; i++) {
                linC ^= sgX[2u * i];
                linL ^= sgX[2u * i + 1u];
            }
            uint linD = 0u;
            if (pc.checksums != 0u) {
                if (last) {
                    linC = mulmod(linC, pc.invC);
                    linL = mulmod(linL, pc.invL);
                }
                linD = (last ? mulmod(linC, pc.shLowLast) : shiftBy(TAB_ML, linC)) ^ linL;
            }
            // Side size: full raw blocks take 256 bytes; only the tensor's last block can be short.
            uint size = ZF12_RAW_SIDE * k;
            uint r = m % ZF12_BLOCK;
            if (r != 0u && hdr[nb - 1u] == ZF12_RAW_HEADER) size = size - ZF12_RAW_SIDE + blockSide(r);
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = k;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = linD;
            atomicAdd(blockSum[c >> 6], size);
        }
        barrier();
    }
}
