// Op::DepthwiseConv (as shaders/depthwise_conv.glsl): x [N, C, H, W] and k [C, 1, kh, kw] ->
// [N, C, OH, OW], taps in (i, j) order, those in the padding skipped. The window loops have the
// constant bound MAX_WINDOW and break at u_kh / u_kw; the backend refuses larger windows.
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
    float y0 = pyx.x * u_sh - u_ph;
    float x0 = pyx.y * u_sw - u_pw;
    float src = plane * u_h * u_w;
    float taps = c * u_kh * u_kw;
    float acc = 0.0;
    for (float ki = 0.0; ki < MAX_WINDOW; ki += 1.0) {
        if (ki >= u_kh) break;
        float y = y0 + ki;
        if (y < 0.0 || y >= u_h) continue;
        for (float kj = 0.0; kj < MAX_WINDOW; kj += 1.0) {
            if (kj >= u_kw) break;
            float x = x0 + kj;
            if (x < 0.0 || x >= u_w) continue;
            acc += fetch(u_x, u_x_size, src + y * u_w + x) * fetch(u_k, u_k_size, taps + ki * u_kw + kj);
        }
    }
    return acc;
}
