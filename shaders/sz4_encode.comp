#version 450
// SplitZip-4 encode, pass 1 of 2: one workgroup per chunk (grid-stride). Writes each chunk's code and low pieces at
// their fixed offsets, its escapes (or, for a raw chunk, the second half of its exponents) to a per-chunk scratch
// slot, its table info word, the linear CRC of its dense pieces (in the CRC word, finished by pass 2) and its side
// size into a per-64-chunk block sum, from which pass 2 (sz4_place) finds the side offsets.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_SZ4_ENCODE
#include "contracts.glsl"
const uint N = 1u << SHIFT;
const uint SLOTS = N / 8u;                          // 8 values per slot
const uint ITERS = SLOTS / WG;                      // slots per thread (WG·U divides SLOTS: host checks)
const uint SCRATCH = N / 8u;                        // scratch words per chunk: rawSide(N)/4

#include "common.glsl"
#define CRC_SHARED_HOT
#include "crc_tables.glsl"

shared uint lut[256];       // exponent -> code, or ESC_FLAG alone when escaped
shared uint lutHi[256];     // the same with the code in bits 4-7: a byte of two codes is lut | lutHi
const uint ESC_FLAG = 0x100u;
// The escapes of each slot, counted in its 4-bit field (slot s: word s / 8, bits 4(s % 8) up; 8 fits): set in the
// main loop (rarely: one atomic per slot that holds an escape, shared by at most 8 invocations), read at the chunk's
// end, where the invocation of subgroup rank r (subgroup, then lane) takes the words [r·NR, (r+1)·NR) — slots in
// value order — so that one exclusive scan of the counts in that rank order places every escape in order, and
// the counts need no second read of the slots.
const uint NW = (SLOTS + 7u) / 8u;
const uint NR = (NW + WG - 1u) / WG;
shared uint escNib[NW];
shared uint sgSum[WG];      // per-subgroup escape totals
shared uint sgX[2u * WG];   // per-subgroup CRC XORs

uint rawSide(uint m) { return ((m / 2u) + 3u) & ~3u; }

// exponent byte of value v (chunk-local) of segment chunk lc, for the rare raw path
uint expAt(uint lc, uint v) {
    uint w = srcw[4u * pc.srcBase + ((lc * N + v) >> 1)];
    return ((v & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
}

// loadSlot returns slot s of segment chunk lc: its 8 values, zeros past m.
uvec4 loadSlot(uint lc, uint s, uint m) {
    uint v0 = 8u * s;
    uvec4 x = uvec4(0u);
    if (v0 + 8u <= m) {
        x = srcv[pc.srcBase + lc * SLOTS + s];
    } else if (v0 < m) {
        // Values past the end are not part of the tensor: they stay zero.
        for (uint q = 0u; q < 4u; q++) {
            uint v = v0 + 2u * q;
            if (v < m) x[q] = srcw[4u * pc.srcBase + (lc * N + v) / 2u] & (v + 1u < m ? ~0u : 0xFFFFu);
        }
    }
    return x;
}

// loadBatch loads the U slots of thread t's batch j (slot (j+u)·WG + t for u < U: each u contiguous across the
// workgroup) of segment chunk lc, m values long.
void loadBatch(uint lc, uint j, uint m, uint t, out uvec4 xs[U]) {
    [[unroll]] for (uint u = 0u; u < U; u++) xs[u] = loadSlot(lc, (j + u) * WG + t, m);
}

// chunkLen is the values of segment chunk lc.
uint chunkLen(uint lc) { return pc.segFirst + lc == pc.chunks - 1u ? pc.lastLen : N; }

// slotEscapes returns the escape bits of the 8 values x of the slot starting at value v0 (values at or past m, the
// zeros after a tensor's end, excluded).
uint slotEscapes(uvec4 x, uint v0, uint m) {
    uint esc = 0u;
    [[unroll]] for (uint b = 0u; b < 8u; b++) {
        uint e = (x[b >> 1] >> ((b & 1u) != 0u ? 23u : 7u)) & 0xFFu;
        if (v0 + b < m && (lut[e] & ESC_FLAG) != 0u) esc |= 1u << b;
    }
    return esc;
}

void main() {
    uint t = gl_LocalInvocationID.x;
    // The first batch of the first chunk is requested before the tables are built and the workgroup waits at the
    // barrier: the loads' latency overlaps that set-up instead of following it.
    uvec4 xs[U];
    if (gl_WorkGroupID.x < pc.segChunks) loadBatch(gl_WorkGroupID.x, 0u, chunkLen(gl_WorkGroupID.x), t, xs);
    loadTables();
    for (uint e = t; e < 256u; e += WG) {
        uint code = ESC_FLAG;
        for (uint i = 0u; i < 16u; i++) {
            if (((pc.cb[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu) == e) code = i;
        }
        lut[e] = code;
        lutHi[e] = code == ESC_FLAG ? ESC_FLAG : code << 4;
    }
    for (uint i = t; i < NW; i += WG) escNib[i] = 0u;
    sgSum[t] = 0u;
    barrier();

    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        for (uint j = 0u; j < ITERS; j += U) {
            // Load U slots first (slot j+u of every thread is contiguous across the workgroup), then work on them;
            // the first chunk's batch 0 was requested before the set-up.
            if (j != 0u || lc != gl_WorkGroupID.x) loadBatch(lc, j, m, t, xs);
            // Bit u: slot u may hold an escape (an exponent whose lookup has ESC_FLAG). Only this flag is kept
            // through the batch: the rare flagged slots are read again below (cache hits) and their escapes counted,
            // which also drops the zeros past a tensor's end.
            uint escF = 0u;
            [[unroll]] for (uint u = 0u; u < U; u++) {
                uint s = (j + u) * WG + t;
                uint v0 = 8u * s;
                uvec4 x = xs[u];
                uint cw = 0u, any = 0u;
                for (uint q = 0u; q < 4u; q++) {
                    // The two values' codes as one byte, ESC_FLAG above it if either is escaped (code 0 then).
                    uint pr = lut[(x[q] >> 7) & 0xFFu] | lutHi[(x[q] >> 23) & 0xFFu];
                    cw |= (pr & 0xFFu) << (8u * q);
                    any |= pr;
                }
                if (v0 + 8u > m) cw &= v0 < m ? (1u << (4u * (m - v0))) - 1u : 0u;
                escF |= ((any >> 8) & 1u) << u;
                uint lw0 = lows2(x.x) | (lows2(x.y) << 16);
                uint lw1 = lows2(x.z) | (lows2(x.w) << 16);
                if (v0 + 8u <= m && (pc.lowBase & 1u) == 0u) {
                    codes[pc.codeBase + lc * SLOTS + s] = cw;
                    lowsv[pc.lowBase / 2u + lc * (N / 8u) + s] = uvec2(lw0, lw1);
                } else if (v0 < m) {
                    codes[pc.codeBase + lc * SLOTS + s] = cw;
                    lows[pc.lowBase + lc * (N / 4u) + 2u * s] = lw0;
                    if (v0 + 4u < m) lows[pc.lowBase + lc * (N / 4u) + 2u * s + 1u] = lw1;
                }
                if (pc.checksums != 0u) {
                    aC = shiftBy(TAB_M4T, aC) ^ cw;
                    aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                    aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
                }
            }
            if (escF != 0u) {
                for (uint u = 0u; u < U; u++) {
                    uint s = (j + u) * WG + t;
                    if (((escF >> u) & 1u) == 0u || 8u * s >= m) continue;
                    uint n = bitCount(slotEscapes(loadSlot(lc, s, m), 8u * s, m));
                    if (n != 0u) atomicOr(escNib[s / 8u], n << (4u * (s % 8u)));
                }
            }
        }
        // Linear CRC of code piece || low piece: per-thread Horner results shifted into place, XORed together per
        // subgroup. Taken before the barrier, so that subgroups done early do it while the others finish (a raw
        // chunk's code piece is summed again below).
        uint xC = 0u, xL = 0u;
        if (pc.checksums != 0u) {
            xC = subgroupXor(mulmod(aC, consts[CONST_KC + t])); // read late: not live through the main loop
            xL = subgroupXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
        }
        barrier();
        // The escapes: this thread's counts summed and scanned, then (unless the chunk goes raw) each escape written
        // at its place in value order. The first slot with escapes is requested now, so that its latency overlaps
        // the scan; any others are read when placed (L1 or L2 hits by now).
        uint myK = 0u, r = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
        uint sF = 0xFFFFFFFFu;
        uvec4 xF = uvec4(0u);
        for (uint i = r * NR; i < min(r * NR + NR, NW); i++) {
            uint nib = escNib[i];
            if (nib != 0u && sF == 0xFFFFFFFFu) {
                sF = 8u * i + uint(findLSB(nib)) / 4u;
                xF = loadSlot(lc, sF, m);
            }
            uint b = (nib & 0x0F0F0F0Fu) + ((nib >> 4) & 0x0F0F0F0Fu); // 4 byte sums of 2 fields each
            myK += (b * 0x01010101u) >> 24;
        }
        // Subgroup totals by shared atomics (zeroed after the checksum's barrier), not subgroupAdd and an elected
        // store: that form miscompiled in a TBE-3 kernel on the H200, and a wrong
        // total here would misplace escapes silently.
        uint before = subgroupExclusiveAdd(myK);
        atomicAdd(sgSum[gl_SubgroupID], myK);
        barrier();
        uint k = 0u;
        for (uint i = 0u; i < gl_NumSubgroups; i++) {
            uint v = sgSum[i];
            before += i < gl_SubgroupID ? v : 0u;
            k += v;
        }
        for (uint i = r * NR; i < min(r * NR + NR, NW); i++) {
            uint nib = escNib[i];
            escNib[i] = 0u; // for the next chunk: its first writes come after this chunk's last barrier
            if (ESCAPE_SIZE * k >= rawSide(m)) continue;
            for (; nib != 0u; nib &= ~(0xFu << (uint(findLSB(nib)) & ~3u))) {
                uint s = 8u * i + uint(findLSB(nib)) / 4u;
                uvec4 x = s == sF ? xF : loadSlot(lc, s, m);
                for (uint esc = slotEscapes(x, 8u * s, m); esc != 0u; esc &= esc - 1u) {
                    uint b = findLSB(esc), w = x[b >> 1];
                    uint e = ((b & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
                    scratch[lc * SCRATCH + before] = (8u * s + b) | (e << ESCAPE_EXP_SHIFT);
                    before++;
                }
            }
        }
        bool raw = !(ESCAPE_SIZE * k < rawSide(m));
        if (raw) {
            // Raw chunk: exponent bytes, the first ceil(m/2) in the code piece, the rest in the side piece.
            memoryBarrierBuffer();
            barrier();
            uint h = (m + 1u) / 2u;
            aC = 0u;
            uint pieceWords = last ? (((m + 1u) / 2u + 3u) / 4u) : N / 8u;
            for (uint j = 0u; j < ITERS; j++) {
                uint q = j * WG + t;
                uint w = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint v = 4u * q + b;
                    if (v < h) w |= expAt(lc, v) << (8u * b);
                }
                if (q < pieceWords) codes[pc.codeBase + lc * SLOTS + q] = w;
                aC = shiftBy(TAB_M4T, aC) ^ w;
            }
            uint spillWords = rawSide(m) / 4u;
            for (uint q = t; q < spillWords; q += WG) {
                uint w = 0u;
                for (uint b = 0u; b < 4u; b++) {
                    uint v = h + 4u * q + b;
                    if (v < m) w |= expAt(lc, v) << (8u * b);
                }
                scratch[lc * SCRATCH + q] = w;
            }
            if (pc.checksums != 0u) xC = subgroupXor(mulmod(aC, consts[CONST_KC + t]));
        }
        if (subgroupElect()) {
            sgX[2u * gl_SubgroupID] = xC;
            sgX[2u * gl_SubgroupID + 1u] = xL;
        }
        barrier();
        sgSum[t] = 0u; // this chunk's escape totals are read; the next chunk's come after its main loop's barrier
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
            uint info = raw ? (CHUNK_RAW << KIND_SHIFT) : k;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = info;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = linD;
            atomicAdd(blockSum[c >> 6], raw ? rawSide(m) : ESCAPE_SIZE * k);
        }
        barrier();
    }
}
