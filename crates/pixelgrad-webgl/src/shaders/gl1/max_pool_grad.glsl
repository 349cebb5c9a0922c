// Op::MaxPoolGrad as a gather (as shaders/max_pool_grad.glsl): x (u_x) and dy (u_b) -> dx.
// The covering windows, at most min(ceil(k / stride), output side) per axis, are visited in
// ascending order in loops of constant bound MAX_LOOP (a 2^15 window at stride 1 covers a
// pixel 2^15 times); ops/window.rs refuses more, and more work per pixel than the old bound
// allowed (MAX_WINDOW^4).
uniform highp sampler2D u_b;
uniform vec2 u_b_size;

// First window covering shifted coordinate t on one axis, and the last (clipped to o - 1).
vec2 covering(float t, float k, float s, float o) {
    float lo = t + 1.0 >= k ? pg_divmod(t + s - k, s).x : 0.0;
    return vec2(lo, min(pg_divmod(t, s).x, o - 1.0));
}

float compute(float i) {
    float hw = u_h * u_w;
    vec2 a = pg_divmod(i, hw);
    vec2 yx = pg_divmod(a.y, u_w);
    vec2 ry = covering(yx.x + u_ph, u_kh, u_sh, u_oh);
    vec2 rx = covering(yx.y + u_pw, u_kw, u_sw, u_ow);
    float v = fetch(u_x, u_x_size, i);
    float acc = 0.0;
    for (float dy = 0.0; dy < MAX_LOOP; dy += 1.0) {
        float oy = ry.x + dy;
        if (oy > ry.y) break;
        for (float dx = 0.0; dx < MAX_LOOP; dx += 1.0) {
            float ox = rx.x + dx;
            if (ox > rx.y) break;
            vec2 m = window_max(a.x * hw, oy, ox);
            if (v == m.x) {
                acc += fetch(u_b, u_b_size, (a.x * u_oh + oy) * u_ow + ox) / m.y;
            }
        }
    }
    return acc;
}
