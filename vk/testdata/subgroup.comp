#version 450
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_ballot : enable
// Reports gl_SubgroupSize, subgroupAdd(1) and the ballot bit count of
// subgroup 0 (checks the subgroup properties the package reports).
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Data { uint v[]; };
void main() {
    uint sum = subgroupAdd(1u);
    uint cnt = subgroupBallotBitCount(subgroupBallot(true));
    if (gl_LocalInvocationIndex == 0u) {
        v[0] = gl_SubgroupSize;
        v[1] = sum;
        v[2] = cnt;
    }
}
