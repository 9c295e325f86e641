#version 450
// SplitZip-4 encode, pass 2 of 2 (side_place.glsl): each chunk's escapes, or a raw chunk's spilled exponents, copied
// from pass 1's scratch slot to the chunk's side offset, the offset recorded and the chunk's CRC-32C finished.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_SZ4_PLACE
#include "contracts.glsl"
const uint N = 1u << SHIFT;
const uint SCRATCH = N / 8u;

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"

uint rawSide(uint m) { return ((m / 2u) + 3u) & ~3u; }

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : ESCAPE_SIZE * (info & COUNT_MASK);
}

// A full chunk's dense pieces are its code piece (n/2 bytes) and its low piece (n bytes): two table shifts.
uint denseShift(uint reg, bool last) { return last ? mulmod(reg, pc.kdLast) : shiftBy(TAB_ML, shiftBy(TAB_MC, reg)); }

#include "side_place.glsl"
