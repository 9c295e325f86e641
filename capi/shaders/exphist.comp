#version 450
// Exponent histogram of BF16 values (capi/devhist.go): hist[e] += the values whose bits 7..14 are e. Each workgroup
// counts into 8 copies of its histogram in shared memory (invocations t and t+8k share one, so at most 4 lanes of a
// 32-wide subgroup contend for an address), then adds them to the global bins. The host zeroes hist first; counts
// are 32-bit, so a run covers fewer than 2^32 values.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Src { uint w[]; };
layout(std430, set = 0, binding = 1) buffer Hist { uint hist[256]; };
layout(push_constant) uniform Push { uint n; } p; // values

shared uint sh[8 * 256];

void main() {
    uint t = gl_LocalInvocationID.x;
    for (uint k = 0u; k < 8u; k++) {
        sh[k * 256u + t] = 0u;
    }
    barrier();
    uint copy = (t & 7u) * 256u;
    uint words = p.n >> 1;
    uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < words; i += stride) {
        uint v = w[i];
        atomicAdd(sh[copy + ((v >> 7) & 0xFFu)], 1u);
        atomicAdd(sh[copy + ((v >> 23) & 0xFFu)], 1u);
    }
    if ((p.n & 1u) != 0u && gl_GlobalInvocationID.x == 0u) {
        atomicAdd(sh[copy + ((w[words] >> 7) & 0xFFu)], 1u);
    }
    barrier();
    uint sum = 0u;
    for (uint k = 0u; k < 8u; k++) {
        sum += sh[k * 256u + t];
    }
    if (sum != 0u) {
        atomicAdd(hist[t], sum);
    }
}
