#version 450
// out[i] = in[i] + ADD + pc.extra for i < pc.n (test shader for package vk).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ADD = 1;
layout(push_constant) uniform Push { uint n; uint extra; } pc;
layout(std430, set = 0, binding = 0) readonly buffer In { uint a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint b[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        b[i] = a[i] + ADD + pc.extra;
    }
}
