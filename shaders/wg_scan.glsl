// wg_scan.glsl: an ordered scan over the workgroup in shared memory. The includer declares `shared uint red[]` of
// at least 2·WG words and `shared uint carry`, and sets WG.

// scanStep returns the exclusive prefix of v over the workgroup in invocation order, plus carry (the sum of earlier
// steps), and adds this step's total to carry. Every thread calls it in uniform control flow. The scan runs in
// shared memory (log2(WG) rounds), not with subgroup operations: on the H200 the subgroup form (subgroupAdd and
// an elected store per subgroup) gave wrong totals in the decoder at workgroups of 512 with narrow CRC tables, a
// miscompile that neither reconvergence guarantee mended, and it costs about 1 %.
uint scanStep(uint v) {
    uint t = gl_LocalInvocationID.x;
    barrier(); // red and carry are free
    red[t] = v;
    barrier();
    uint src = 0u, dst = WG; // two halves of red, read one and written the other in each round
    for (uint d = 1u; d < WG; d <<= 1) {
        uint x = red[src + t];
        if (t >= d) x += red[src + t - d];
        red[dst + t] = x;
        barrier();
        uint s = src;
        src = dst;
        dst = s;
    }
    uint incl = red[src + t], all = red[src + WG - 1u], base = carry;
    barrier();
    if (t == 0u) carry += all;
    return base + incl - v;
}
