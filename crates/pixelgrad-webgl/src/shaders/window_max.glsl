// Shared by max_pool.glsl and max_pool_grad.glsl (Op::MaxPool): the maximum of window
// (oy, ox) of the image plane starting at `base` of u_x, and how many taps equal it. Taps in
// (i, j) order, the padding skipped (it is smaller than the window, so some tap is inside); a
// later tap replaces the maximum only if greater.
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
    int y0 = oy * u_sh - u_ph;
    int x0 = ox * u_sw - u_pw;
    float m = 0.0;
    float ties = 0.0;
    for (int ki = 0; ki < u_kh; ki++) {
        int y = y0 + ki;
        if (y < 0 || y >= u_h) continue;
        for (int kj = 0; kj < u_kw; kj++) {
            int x = x0 + kj;
            if (x < 0 || x >= u_w) continue;
            float v = fetch(u_x, base + y * u_w + x);
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
