// Op::Random: Philox4x32-10 keyed by the seed, counter = element index, bit-for-bit the same
// words as pixelgrad_core::rng. CONFIG 0: uniform, 1: normal (Box-Muller).
uniform uvec2 u_key;    // (seed_lo, seed_hi)
uniform uint u_ctr_hi;  // high word of the element counter (0 below 2^32 elements)
uniform float u_p0;     // uniform: low, normal: mean
uniform float u_p1;     // uniform: high - low (computed on the host, like the CPU), normal: std

// 32x32 -> 64-bit product as (hi, lo). GLSL ES 3.00 has no umulExtended, so the high word is
// assembled from 16-bit halves (each partial product fits in 32 bits).
uvec2 mul_wide(uint a, uint b) {
    uint al = a & 0xFFFFu, ah = a >> 16u;
    uint bl = b & 0xFFFFu, bh = b >> 16u;
    uint ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint mid = (ll >> 16u) + (lh & 0xFFFFu) + (hl & 0xFFFFu);
    uint hi = hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return uvec2(hi, a * b);
}

uvec4 philox(uvec4 ctr, uvec2 key) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key += uvec2(0x9E3779B9u, 0xBB67AE85u);
        }
        uvec2 p0 = mul_wide(0xD2511F53u, ctr.x);
        uvec2 p1 = mul_wide(0xCD9E8D57u, ctr.z);
        ctr = uvec4(p1.x ^ ctr.y ^ key.x, p1.y, p0.x ^ ctr.w ^ key.y, p0.y);
    }
    return ctr;
}

// 24 random bits scaled to [0, 1): exact in f32.
float unit(uint r) {
    return float(r >> 8u) * (1.0 / 16777216.0);
}

float compute(int i) {
    uvec4 w = philox(uvec4(uint(i), u_ctr_hi, 0u, 0u), u_key);
#if CONFIG == 0
    return u_p0 + u_p1 * unit(w.x);
#else
    float u1 = unit(w.x) + 1.0 / 16777216.0;
    float u2 = unit(w.y);
    // pg_box_muller is rendered from its one definition (kernel::defs::box_muller_kernel).
    return u_p0 + u_p1 * pg_box_muller(u1, u2);
#endif
}
