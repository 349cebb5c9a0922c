// Shared by max_pool.glsl and max_pool_grad.glsl (as shaders/window_max.glsl): the maximum of
// window (oy, ox) of the plane starting at `base` of u_x and its tie count, over its taps
// inside the image (`tap_range`). The loops have the constant bound MAX_WINDOW and break at
// the taps' count, at most min(k, image side) per axis; the backend refuses images and windows
// both wider than MAX_WINDOW.
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
    float ys = oy * u_sh;
    float xs = ox * u_sw;
    vec2 r = tap_range(ys, u_kh, u_ph, u_h);
    vec2 c = tap_range(xs, u_kw, u_pw, u_w);
    float m = 0.0;
    float ties = 0.0;
    for (float di = 0.0; di < MAX_WINDOW; di += 1.0) {
        if (di >= r.y - r.x) break;
        float row = base + (ys + r.x + di - u_ph) * u_w + xs + c.x - u_pw;
        for (float dj = 0.0; dj < MAX_WINDOW; dj += 1.0) {
            if (dj >= c.y - c.x) break;
            float v = fetch(u_x, u_x_size, row + dj);
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
