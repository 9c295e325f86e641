#version 450
// SplitZip-4 encode, pass 2 of 3: one workgroup turns the per-64-chunk side sums into exclusive prefix sums and
// stores the side section's total size, the one number the host reads back.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#define KERNEL_SZ4_SCAN
#include "contracts.glsl"

shared uint sgSum[WG];
shared uint carry;

void main() {
    uint t = gl_LocalInvocationID.x;
    if (t == 0u) carry = 0u;
    barrier();
    for (uint b0 = 0u; b0 < pc.nb; b0 += WG) {
        uint i = b0 + t;
        uint v = i < pc.nb ? work[i] : 0u;
        uint ex = subgroupExclusiveAdd(v);
        uint tot = subgroupAdd(v);
        if (subgroupElect()) sgSum[gl_SubgroupID] = tot;
        barrier();
        uint base = carry, all = 0u;
        for (uint s = 0u; s < gl_NumSubgroups; s++) {
            base += s < gl_SubgroupID ? sgSum[s] : 0u;
            all += sgSum[s];
        }
        if (i < pc.nb) work[pc.nb + i] = base + ex;
        barrier();
        if (t == 0u) carry += all;
        barrier();
    }
    if (t == 0u) work[2u * pc.nb] = carry;
}
