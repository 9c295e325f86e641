#version 450
// Exponent histogram of BF16 values (codec/vkcodec ExpHistOp): hist[e] += the values whose bits 7..14 are e, the
// counts codec.ExpHistogram gives on the host. Each workgroup counts into 8 copies of its histogram in shared memory
// (invocations t and t+8k share one, so at most 4 lanes of a 32-wide subgroup contend for an address), then adds
// them to the global bins. The host zeroes hist first; counts are 32-bit, so a run covers fewer than 2^32 values.
#define KERNEL_EXPHIST
#include "contracts.glsl"

shared uint sh[8u * 256u];

void main() {
    uint t = gl_LocalInvocationID.x;
    for (uint i = t; i < 8u * 256u; i += WG) sh[i] = 0u;
    barrier();
    uint copy = (t & 7u) * 256u;
    uint words = pc.n >> 1;
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < words; i += stride) {
        uint v = src[pc.srcBase + i];
        atomicAdd(sh[copy + ((v >> 7) & 0xFFu)], 1u);
        atomicAdd(sh[copy + ((v >> 23) & 0xFFu)], 1u);
    }
    if ((pc.n & 1u) != 0u && gl_GlobalInvocationID.x == 0u) {
        atomicAdd(sh[copy + ((src[pc.srcBase + words] >> 7) & 0xFFu)], 1u);
    }
    barrier();
    for (uint e = t; e < 256u; e += WG) {
        uint sum = 0u;
        for (uint k = 0u; k < 8u; k++) sum += sh[k * 256u + e];
        if (sum != 0u) atomicAdd(hist[e], sum);
    }
}
