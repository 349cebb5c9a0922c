// Shared by max_pool.glsl and max_pool_grad.glsl (Op::MaxPool): the maximum of window
// (oy, ox) of the image plane starting at `base` of u_x, and how many taps equal it. Taps in
// (i, j) order, only those inside the image (`tap_range`: at most H x W however large the
// window; the padding is smaller than the window, so some tap is inside); a later tap replaces
// the maximum only if greater.
uniform highp sampler2D u_x;
uniform int u_c;
uniform int u_h;
uniform int u_w;
uniform int u_kh;
uniform int u_kw;
uniform int u_sh;
uniform int u_sw;
uniform int u_ph;
uniform int u_pw;
uniform int u_oh;
uniform int u_ow;

vec2 window_max(int base, int oy, int ox) {
    int ys = oy * u_sh;
    int xs = ox * u_sw;
    ivec2 r = tap_range(ys, u_kh, u_ph, u_h);
    ivec2 c = tap_range(xs, u_kw, u_pw, u_w);
    float m = 0.0;
    float ties = 0.0;
    for (int ki = r.x; ki < r.y; ki++) {
        int row = base + (ys + ki - u_ph) * u_w + xs - u_pw;
        for (int kj = c.x; kj < c.y; kj++) {
            float v = fetch(u_x, row + kj);
            if (ties == 0.0 || v > m) {
                m = v;
                ties = 1.0;
            } else if (v == m) {
                ties += 1.0;
            }
        }
    }
    return vec2(m, max(ties, 1.0));
}
