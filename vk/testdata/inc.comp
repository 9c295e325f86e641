#version 450
// data[i] += pc.delta in place (re-submission test).
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint n; uint delta; } pc;
layout(std430, set = 0, binding = 0) buffer Data { uint v[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) {
        v[i] += pc.delta;
    }
}
