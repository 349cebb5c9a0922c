// Op::DepthwiseConv (as shaders/depthwise_conv.glsl): x [N, C, H, W] and k [C, 1, kh, kw] ->
// [N, C, OH, OW], taps in (i, j) order, only those inside the image (`tap_range`). The loops
// have the constant bound MAX_WINDOW and break at the taps' count, at most min(k, image side)
// per axis; the backend refuses images and windows both wider than MAX_WINDOW.
uniform highp sampler2D u_x;
uniform vec2 u_x_size;
uniform highp sampler2D u_k;
uniform vec2 u_k_size;
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

float compute(float i) {
    vec2 a = pg_divmod(i, u_oh * u_ow);
    float plane = a.x;
    vec2 pyx = pg_divmod(a.y, u_ow);
    float c = pg_divmod(plane, u_c).y;
    float ys = pyx.x * u_sh;
    float xs = pyx.y * u_sw;
    vec2 r = tap_range(ys, u_kh, u_ph, u_h);
    vec2 q = tap_range(xs, u_kw, u_pw, u_w);
    float src = plane * u_h * u_w + xs + q.x - u_pw;
    float taps = c * u_kh * u_kw + q.x;
    float acc = 0.0;
    for (float di = 0.0; di < MAX_WINDOW; di += 1.0) {
        if (di >= r.y - r.x) break;
        float ki = r.x + di;
        float row = src + (ys + ki - u_ph) * u_w;
        float tap = taps + ki * u_kw;
        for (float dj = 0.0; dj < MAX_WINDOW; dj += 1.0) {
            if (dj >= q.y - q.x) break;
            acc += fetch(u_x, u_x_size, row + dj) * fetch(u_k, u_k_size, tap + dj);
        }
    }
    return acc;
}
