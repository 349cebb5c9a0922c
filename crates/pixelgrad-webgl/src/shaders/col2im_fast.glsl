// Op::Col2Im, hand-written a texel at a time (CONFIG 1 any stride, CONFIG 2 stride 1 with no
// division at all; the general program, one element per call, is rendered from
// pixelgrad_core::kernel::columns and serves WebGL1): the first pixel's position is decomposed
// once and the next three stepped along the row; each pixel sums the windows covering it in
// the program's order (ascending (i, j)).
// Kept for a measured speed: the cnn step's col2im 7.5 -> 3.7 ms on llvmpipe against one
// element per call (commit 788bad2).
#define PG_COMPUTE4

// Pixel (plane, y, x): with t = y + ph, the windows covering row y are those at rows oy with
// oy * sh <= t < oy * sh + kh and oy < OH, at kernel row i = t - oy * sh.
float col2im_at(int plane, int y, int x) {
    int ty = y + u_ph;
    int tx = x + u_pw;
#if CONFIG == 2
    int oy_hi = min(ty, u_oh - 1);
    int oy_lo = max(ty + 1 - u_kh, 0);
    int ox_hi = min(tx, u_ow - 1);
    int ox_lo = max(tx + 1 - u_kw, 0);
#else
    int oy_hi = min(ty / u_sh, u_oh - 1);
    int oy_lo = ty >= u_kh ? (ty - u_kh) / u_sh + 1 : 0;
    int ox_hi = min(tx / u_sw, u_ow - 1);
    int ox_lo = tx >= u_kw ? (tx - u_kw) / u_sw + 1 : 0;
#endif
    int base = plane * u_kh * u_kw;
    float acc = 0.0;
    for (int oy = oy_hi; oy >= oy_lo; --oy) {
        int ki = ty - oy * u_sh;
        for (int ox = ox_hi; ox >= ox_lo; --ox) {
            int row = base + ki * u_kw + tx - ox * u_sw;
            acc += PG_H(fetch(u_x, row * (u_oh * u_ow) + oy * u_ow + ox));
        }
    }
    return acc;
}

vec4 compute4(int i) {
    int hw = u_h * u_w;
    int plane = i / hw;
    int q = i - plane * hw;
    int y = q / u_w;
    int x = q - y * u_w;
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        float e = i + l < u_out_n ? col2im_at(plane, y, x) : 0.0;
        v = mix(v, vec4(e), equal(ivec4(l), ivec4(0, 1, 2, 3)));
        if (++x == u_w) {
            x = 0;
            if (++y == u_h) {
                y = 0;
                ++plane;
            }
        }
    }
    return v;
}
