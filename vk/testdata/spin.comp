#version 450
// Burns pc.iters LCG steps per invocation (keeps submissions in flight).
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint iters; } pc;
layout(std430, set = 0, binding = 0) buffer Data { uint v[]; };
void main() {
    uint x = gl_GlobalInvocationID.x;
    for (uint k = 0u; k < pc.iters; k++) {
        x = x * 1664525u + 1013904223u;
    }
    v[gl_GlobalInvocationID.x] = x;
}
