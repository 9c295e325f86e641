#version 450
// Copy roofline: grid-stride 16-byte loads and stores, the best a kernel can move through Vulkan on this device.
// Profiling shapes (vkzip-lab bench --copy-shape) read R and write W vectors per unit, so a codec's mix of reads and
// writes can be measured with none of its work; the roofline itself is R = W = 1.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint R = 1;          // vectors read per unit
layout(constant_id = 2) const uint W = 1;          // vectors written per unit
layout(constant_id = 3) const uint CONTIGUOUS = 0; // 1: a unit's vectors are consecutive; 0: one stream per vector
layout(constant_id = 4) const uint U = 1;          // units per thread loaded together

layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform PC { uint count; } pc; // units

void main() {
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i0 = gl_GlobalInvocationID.x; i0 < pc.count; i0 += U * stride) {
        uvec4 x[U];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            uint i = i0 + u * stride;
            x[u] = uvec4(0u);
            if (i < pc.count)
                [[unroll]] for (uint r = 0u; r < R; r++) x[u] ^= src[CONTIGUOUS != 0u ? i * R + r : r * pc.count + i];
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            uint i = i0 + u * stride;
            if (i < pc.count)
                [[unroll]] for (uint w = 0u; w < W; w++)
                    dst[CONTIGUOUS != 0u ? i * W + w : w * pc.count + i] = x[u] ^ uvec4(w);
        }
    }
}
