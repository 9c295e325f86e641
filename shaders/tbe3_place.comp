#version 450
// TBE-3 encode, pass 2 of 2 (side_place.glsl): each chunk's side piece — its fallback bytes, or a raw chunk's
// remaining exponents — copied from pass 1's scratch slot to the chunk's side offset, the offset recorded and the
// chunk's CRC-32C finished.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#include "layout.glsl"

#define KERNEL_TBE3_PLACE
#include "contracts.glsl"

#include "common.glsl"
#define NO_SHARED_TABLES
#include "crc_tables.glsl"
#include "tbe3_common.glsl"

uint sideSize(uint info, uint m) {
    return (info >> KIND_SHIFT) == CHUNK_RAW ? rawSide(m) : (((info & TBE3_COUNT_MASK) + 3u) & ~3u);
}

// The dense pieces (plane and SM pieces) differ in length between full and last chunks: one multiplication each.
uint denseShift(uint reg, bool last) { return mulmod(reg, last ? pc.kdLast : pc.kdFull); }

#include "side_place.glsl"
