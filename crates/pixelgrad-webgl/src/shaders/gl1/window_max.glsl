// Shared by max_pool.glsl and max_pool_grad.glsl (as shaders/window_max.glsl): the maximum of
// window (oy, ox) of the plane starting at `base` of u_x and its tie count. The window loops
// have the constant bound MAX_WINDOW and break at u_kh / u_kw; the backend refuses larger
// windows.
uniform highp sampler2D u_x;
uniform vec2 u_x_size;
uniform float u_c;
uniform float u_h;
uniform float u_w;
uniform float u_kh;
uniform float u_kw;
uniform float u_sh;
uniform float u_sw;
uniform float u_ph;
uniform float u_pw;
uniform float u_oh;
uniform float u_ow;

vec2 window_max(float base, float oy, float ox) {
    float y0 = oy * u_sh - u_ph;
    float x0 = ox * u_sw - u_pw;
    float m = 0.0;
    float ties = 0.0;
    for (float ki = 0.0; ki < MAX_WINDOW; ki += 1.0) {
        if (ki >= u_kh) break;
        float y = y0 + ki;
        if (y < 0.0 || y >= u_h) continue;
        for (float kj = 0.0; kj < MAX_WINDOW; kj += 1.0) {
            if (kj >= u_kw) break;
            float x = x0 + kj;
            if (x < 0.0 || x >= u_w) continue;
            float v = fetch(u_x, u_x_size, base + y * u_w + x);
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
