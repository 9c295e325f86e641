#version 450
// SplitZip-4 encode, pass 1 of 3: one workgroup per chunk (grid-stride). Writes each chunk's code and low pieces at
// their fixed offsets, its escapes (or, for a raw chunk, the second half of its exponents) to a per-chunk scratch
// slot, its table info word, the linear CRC of its dense pieces (in the CRC word, finished by pass 3) and its side
// size into a per-64-chunk block sum for pass 2's prefix sum.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require

#include "layout.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;        // threads per workgroup
layout(constant_id = 1) const uint SHIFT = 14;      // chunk = 2^SHIFT values
layout(constant_id = 2) const uint REPL = 1;        // CRC table replication
layout(constant_id = 5) const uint U = 2;           // slots per thread loaded together (memory-level parallelism)
layout(constant_id = 6) const uint LIST_CAP = 1024; // escapes held in shared memory per chunk (all subgroups)
layout(constant_id = 7) const uint PROF = 0;        // profiling only (wrong results): bits switch parts off, see
                                                    // Options.Profile; 0 in every real use
const uint N = 1u << SHIFT;
const uint SLOTS = N / 8u;                          // 8 values per slot
const uint ITERS = SLOTS / WG;                      // slots per thread (WG·U divides SLOTS: host checks)
const uint SCRATCH = N / 8u;                        // scratch words per chunk: rawSide(N)/4

layout(std430, binding = 0) readonly buffer SrcV { uvec4 srcv[]; };  // segment's values, 8 per uvec4
layout(std430, binding = 0) readonly buffer SrcW { uint srcw[]; };
layout(std430, binding = 1) writeonly buffer Codes { uint codes[]; }; // segment's code stream
layout(std430, binding = 2) writeonly buffer Lows { uint lows[]; };   // segment's low stream
layout(std430, binding = 2) writeonly buffer LowsV { uvec2 lowsv[]; };
layout(std430, binding = 3) buffer Table { uint table[]; };           // the whole chunk table
layout(std430, binding = 4) writeonly buffer Scratch { uint scratch[]; }; // segment's scratch slots
layout(std430, binding = 5) readonly buffer Consts { uint consts[]; };
layout(std430, binding = 6) buffer Work { uint blockSum[]; };          // per 64 chunks, zeroed by the host

layout(push_constant) uniform PC {
    uvec4 cb;          // codebook, 16 exponents
    uint chunks;       // chunks in the tensor
    uint segFirst;     // first chunk of the bound segment
    uint segChunks;    // chunks in the segment
    uint lastLen;      // values in the tensor's last chunk
    uint invC;         // x^(-8 zC): zero bytes the last chunk's code piece lacks for a full piece
    uint invL;         // the same for its low piece
    uint shLowFull;    // x^(8 n): shifts a full chunk's code-piece CRC over its low piece
    uint shLowLast;    // x^(8 align4(lastLen)) for the last chunk
    uint checksums;
    uint srcBase;      // binding 0 starts this many uvec4s before the segment's first value
    uint codeBase;     // word offsets of the segment (codes, lows) and of the table within their bindings
    uint lowBase;
    uint tableBase;
} pc;

#include "common.glsl"
#define CRC_SHARED_HOT
#include "crc_tables.glsl"

// subgroupSharedBarrier syncs the subgroup and orders its shared memory only (subgroupBarrier() also orders buffer
// memory, which may wait for the loads in flight).
void subgroupSharedBarrier() {
    controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease);
}

shared uint lut[256];       // exponent -> code, or ESC_FLAG alone when escaped
shared uint lutHi[256];     // the same with the code in bits 4-7: a byte of two codes is lut | lutHi
const uint ESC_FLAG = 0x100u;
shared uint escList[LIST_CAP]; // escapes, one sorted run per subgroup: no workgroup barrier while scanning
shared uint sgCount[WG];    // escapes each subgroup found in the current chunk
shared uint sgSum[WG];      // per-subgroup totals for the ordered fallback scan
shared uint sgX[2u * WG];   // per-subgroup CRC XORs
shared uint overflow;       // a subgroup's run outgrew its share of escList

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
    if ((PROF & 128u) != 0u) {
        x = uvec4(s * 0x9E3779B1u, s ^ 0x3F803F80u, s * 40503u, s + 0x3F803F80u) & 0x3FFF3FFFu;
    } else if (v0 + 8u <= m) {
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

// escBits returns the escape bits of the 8 values of slot s of segment chunk lc (values at or past m excluded).
uint escBits(uint lc, uint s, uint m) {
    uint esc = 0u;
    uint v0 = 8u * s;
    for (uint b = 0u; b < 8u; b++) {
        if (v0 + b < m) esc |= (lut[expAt(lc, v0 + b)] >> 8) << b;
    }
    return esc;
}

void main() {
    uint t = gl_LocalInvocationID.x;
    loadTables();
    for (uint e = t; e < 256u; e += WG) {
        uint code = ESC_FLAG;
        for (uint i = 0u; i < 16u; i++) {
            if (((pc.cb[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu) == e) code = i;
        }
        lut[e] = code;
        lutHi[e] = code == ESC_FLAG ? ESC_FLAG : code << 4;
    }
    barrier();

    for (uint lc = gl_WorkGroupID.x; lc < pc.segChunks; lc += gl_NumWorkGroups.x) {
        uint c = pc.segFirst + lc;
        bool last = c == pc.chunks - 1u;
        uint m = last ? pc.lastLen : N;
        uint kSG = 0u; // escapes this subgroup found (uniform within the subgroup)
        uint aC = 0u, aL0 = 0u, aL1 = 0u;
        if (t == 0u) overflow = 0u;
        // With one entry per (slot row, subgroup) in WG words, sgX counts each subgroup's escapes per row (words
        // 0..) and where they start in its run (from WG), so that the merge below places each escape directly.
        // Each subgroup zeroes its own counts: no workgroup barrier.
        bool rowCounts = ITERS * gl_NumSubgroups <= WG;
        if (rowCounts) {
            for (uint r = gl_SubgroupInvocationID; r < ITERS; r += gl_SubgroupSize)
                sgX[r * gl_NumSubgroups + gl_SubgroupID] = 0u;
            subgroupSharedBarrier();
        }
        for (uint j = 0u; j < ITERS; j += U) {
            // Load U slots first (slot j+u of every thread is contiguous across the workgroup), then work on them.
            uvec4 xs[U];
            [[unroll]] for (uint u = 0u; u < U; u++) xs[u] = loadSlot(lc, (j + u) * WG + t, m);
            // Bit u: slot u may hold an escape (an exponent whose lookup has ESC_FLAG). Only this flag is kept: the
            // rare path below finds the escapes again from memory, which also drops the zeros past a tensor's end.
            uint escF = 0u;
            [[unroll]] for (uint u = 0u; u < U; u++) {
                uint s = (j + u) * WG + t;
                uint v0 = 8u * s;
                uvec4 x = xs[u];
                uint cw = 0u, any = 0u;
                for (uint q = 0u; q < 4u; q++) {
                    // The two values' codes as one byte, ESC_FLAG above it if either is escaped (code 0 then).
                    uint pr = (PROF & 32u) != 0u ? ((x[q] >> 7) & 0xFu) | ((x[q] >> 19) & 0xF0u)
                                                 : lut[(x[q] >> 7) & 0xFFu] | lutHi[(x[q] >> 23) & 0xFFu];
                    cw |= (pr & 0xFFu) << (8u * q);
                    any |= pr;
                }
                if (v0 + 8u > m) cw &= v0 < m ? (1u << (4u * (m - v0))) - 1u : 0u;
                escF |= ((any >> 8) & 1u) << u;
                uint lw0 = lows2(x.x) | (lows2(x.y) << 16);
                uint lw1 = lows2(x.z) | (lows2(x.w) << 16);
                if ((PROF & 64u) != 0u && (cw ^ lw0 ^ lw1) != 0x12345678u) {
                    // profiling: no stores (the values stay live through the condition)
                } else if (v0 + 8u <= m && (pc.lowBase & 1u) == 0u) {
                    codes[pc.codeBase + lc * SLOTS + s] = cw;
                    lowsv[pc.lowBase / 2u + lc * (N / 8u) + s] = uvec2(lw0, lw1);
                } else if (v0 < m) {
                    codes[pc.codeBase + lc * SLOTS + s] = cw;
                    lows[pc.lowBase + lc * (N / 4u) + 2u * s] = lw0;
                    if (v0 + 4u < m) lows[pc.lowBase + lc * (N / 4u) + 2u * s + 1u] = lw1;
                }
                if (pc.checksums != 0u && (PROF & 1u) == 0u) {
                    aC = shiftBy(TAB_M4T, aC) ^ cw;
                    aL0 = shiftBy(TAB_M8T, aL0) ^ lw0;
                    aL1 = shiftBy(TAB_M8T, aL1) ^ lw1;
                }
            }
            // Escapes go to this subgroup's run, in value order (slot, then lane). They are rare: one vote per U
            // slots, and the exponents are re-read from memory on that path, so the values need not stay live.
            if ((PROF & 2u) == 0u && subgroupAny(escF != 0u)) {
                uint share = LIST_CAP / gl_NumSubgroups, listBase = gl_SubgroupID * share; // this subgroup's run
                uint sg = gl_SubgroupSize, ob = gl_SubgroupID * sg; // this subgroup's owner table in sgSum
                [[dont_unroll]] for (uint u = 0u; u < U; u++) {
                    // The subgroup tests the flagged slots' values together, one value per invocation: the n
                    // flagged slots in lane order, 8 values each, sg values per pass. Each invocation learns the
                    // owner of its slot from a table the owners fill by rank, and takes the value over by shuffle.
                    uint v0 = 8u * ((j + u) * WG + t);
                    bool fl = ((escF >> u) & 1u) != 0u && v0 < m;
                    uvec4 fb = subgroupBallot(fl);
                    uint n = subgroupBallotBitCount(fb), rowK = 0u;
                    if (n == 0u) continue;
                    uvec4 y = fl ? loadSlot(lc, v0 / 8u, m) : uvec4(0u); // the flagged slots again, one 16-byte load
                    if (fl) sgSum[ob + subgroupBallotExclusiveBitCount(fb)] = gl_SubgroupInvocationID;
                    subgroupSharedBarrier();
                    for (uint p = 0u; p * sg < 8u * n; p++) {
                        uint i = p * sg + gl_SubgroupInvocationID, b = i & 7u;
                        uint own = sgSum[ob + min(i >> 3, n - 1u)];
                        uint w0 = subgroupShuffle(y.x, own), w1 = subgroupShuffle(y.y, own);
                        uint w2 = subgroupShuffle(y.z, own), w3 = subgroupShuffle(y.w, own);
                        uint pos = subgroupShuffle(v0, own) + b;
                        uint w = b < 4u ? (b < 2u ? w0 : w1) : (b < 6u ? w2 : w3);
                        uint e = ((b & 1u) != 0u ? (w >> 23) : (w >> 7)) & 0xFFu;
                        bool esc = i < 8u * n && pos < m && (lut[e] & ESC_FLAG) != 0u;
                        uvec4 eb = subgroupBallot(esc);
                        if (esc) {
                            uint idx = kSG + rowK + subgroupBallotExclusiveBitCount(eb);
                            if (idx < share) {
                                escList[listBase + idx] = pos | (e << ESCAPE_EXP_SHIFT);
                            } else {
                                overflow = 1u;
                            }
                        }
                        rowK += subgroupBallotBitCount(eb);
                    }
                    subgroupSharedBarrier(); // the owner table is read before the next slot row writes it
                    if (rowCounts && rowK != 0u && subgroupElect()) {
                        uint e = (j + u) * gl_NumSubgroups + gl_SubgroupID;
                        sgX[e] = rowK;
                        sgX[WG + e] = kSG;
                    }
                    kSG += rowK;
                }
            }
        }
        uint share = LIST_CAP / gl_NumSubgroups; // list entries per subgroup
        if (subgroupElect()) sgCount[gl_SubgroupID] = kSG;
        // Linear CRC of code piece || low piece: per-thread Horner results shifted into place, XORed together per
        // subgroup. Taken before the barrier, so that subgroups done early do it while the others finish (a raw
        // chunk's code piece is summed again below).
        uint xC = 0u, xL = 0u;
        if (pc.checksums != 0u && (PROF & 1u) == 0u) {
            xC = subgroupXor(mulmod(aC, consts[CONST_KC + t])); // read late: not live through the main loop
            xL = subgroupXor(mulmod(shiftBy(TAB_M4, aL0) ^ aL1, consts[CONST_KL + t]));
        }
        barrier();
        uint k = 0u;
        for (uint i = 0u; i < gl_NumSubgroups; i++) k += sgCount[i];
        if (ESCAPE_SIZE * k < rawSide(m) && (PROF & 2048u) == 0u) {
            if (overflow == 0u && rowCounts && k > WG / 4u) {
                // An escape's place: the escapes of earlier rows, and of earlier subgroups in its row (an exclusive
                // scan of the counts in row-major order, one entry per invocation), plus its index in its
                // subgroup's part of the row. For a few escapes the binary searches below cost less than the
                // scan's two barriers.
                uint e = ITERS * gl_NumSubgroups;
                uint cnt = t < e ? sgX[t] : 0u;
                uint before = subgroupExclusiveAdd(cnt);
                uint tot = subgroupAdd(cnt);
                if (subgroupElect()) sgSum[gl_SubgroupID] = tot;
                barrier();
                for (uint i = 0u; i < gl_SubgroupID; i++) before += sgSum[i];
                if (t < e) sgX[t] = before;
                barrier();
                uint g = gl_SubgroupID;
                for (uint i = gl_SubgroupInvocationID; i < sgCount[g]; i += gl_SubgroupSize) {
                    uint w = escList[g * share + i];
                    uint re = ((w & ESCAPE_POS_MASK) / (8u * WG)) * gl_NumSubgroups + g;
                    scratch[lc * SCRATCH + sgX[re] + i - sgX[WG + re]] = w;
                }
                barrier(); // sgX is read before the checksum below reuses it
            } else if (overflow == 0u) {
                // Merge the sorted runs: an escape's place is its index in its run plus, for every other run, how
                // many of that run's escapes come before it (binary search).
                uint total = k;
                for (uint i = t; i < total; i += WG) {
                    // Locate flat index i in the runs.
                    uint r = 0u, left = i;
                    while (left >= sgCount[r]) { left -= sgCount[r]; r++; }
                    uint w = escList[r * share + left];
                    uint pos = w & ESCAPE_POS_MASK;
                    uint rank = left;
                    for (uint o = 0u; o < gl_NumSubgroups; o++) {
                        if (o == r) continue;
                        uint lo = 0u, hi = sgCount[o];
                        while (lo < hi) {
                            uint mid = (lo + hi) / 2u;
                            if ((escList[o * share + mid] & ESCAPE_POS_MASK) < pos) lo = mid + 1u; else hi = mid;
                        }
                        rank += lo;
                    }
                    scratch[lc * SCRATCH + rank] = w;
                }
            } else {
                // A subgroup found more escapes than its share of shared memory: rescan the chunk in order with a
                // workgroup-wide prefix sum per slot row (slow, for unusual inputs only).
                uint kk = 0u;
                for (uint j = 0u; j < ITERS; j++) {
                    uint s = j * WG + t;
                    uint esc = 8u * s < m ? escBits(lc, s, m) : 0u;
                    uint tot = subgroupAdd(bitCount(esc));
                    if (subgroupElect()) sgSum[gl_SubgroupID] = tot;
                    barrier();
                    uint base = kk, all = 0u;
                    for (uint i = 0u; i < gl_NumSubgroups; i++) {
                        uint v = sgSum[i];
                        base += i < gl_SubgroupID ? v : 0u;
                        all += v;
                    }
                    barrier();
                    uint idx = base + subgroupExclusiveAdd(bitCount(esc));
                    while (esc != 0u) {
                        uint b = findLSB(esc);
                        esc &= esc - 1u;
                        uint v = 8u * s + b;
                        scratch[lc * SCRATCH + idx] = v | (expAt(lc, v) << ESCAPE_EXP_SHIFT);
                        idx++;
                    }
                    kk += all;
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
            if (pc.checksums != 0u && (PROF & 1u) == 0u) xC = subgroupXor(mulmod(aC, consts[CONST_KC + t]));
        }
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
            uint info = raw ? (CHUNK_RAW << KIND_SHIFT) : k;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_INFO] = info;
            table[pc.tableBase + c * CHUNK_ENTRY_WORDS + ENTRY_CRC] = linD;
            atomicAdd(blockSum[c >> 6], raw ? rawSide(m) : ESCAPE_SIZE * k);
        }
        barrier();
    }
}
