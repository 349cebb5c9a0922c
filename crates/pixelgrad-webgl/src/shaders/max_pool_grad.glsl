// Op::MaxPoolGrad as a gather: x [N, C, H, W] (u_x) and dy [N, C, OH, OW] (u_b) -> dx. Each
// pixel visits the windows covering it in ascending (oy, ox) order, recomputes each one's
// maximum and ties (window_max.glsl comes first) and adds dy / ties where it equals the
// maximum: the CPU's sums, in its order.
uniform highp sampler2D u_b;

float compute(int i) {
    int hw = u_h * u_w;
    int plane = i / hw;
    int q = i % hw;
    int ty = q / u_w + u_ph;
    int tx = q % u_w + u_pw;
    int y_lo = ty + 1 >= u_kh ? (ty + 1 - u_kh + u_sh - 1) / u_sh : 0;
    int y_hi = min(ty / u_sh, u_oh - 1);
    int x_lo = tx + 1 >= u_kw ? (tx + 1 - u_kw + u_sw - 1) / u_sw : 0;
    int x_hi = min(tx / u_sw, u_ow - 1);
    float v = fetch(u_x, i);
    float acc = 0.0;
    for (int oy = y_lo; oy <= y_hi; oy++) {
        for (int ox = x_lo; ox <= x_hi; ox++) {
            vec2 m = window_max(plane * hw, oy, ox);
            if (v == m.x) {
                acc += fetch(u_b, (plane * u_oh + oy) * u_ow + ox) / m.y;
            }
        }
    }
    return acc;
}
