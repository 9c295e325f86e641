#version 450
// Copy roofline: grid-stride 16-byte loads and stores, the best a kernel can move through Vulkan on this device.
// Profiling shapes (vkzip-lab bench --copy-shape) read R and write W vectors per unit, so a codec's mix of reads and
// writes can be measured with none of its work; the roofline itself is R = W = 1.
#extension GL_EXT_control_flow_attributes : require
#define KERNEL_COPY
#include "contracts.glsl"

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
