// Op::Col2Im as a gather (as shaders/col2im.glsl). The kernel-window loops have the constant
// bound MAX_WINDOW and break at u_kh / u_kw; the backend refuses larger windows.
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

float compute(float i) {
    vec2 a = pg_divmod(i, u_w);
    vec2 b = pg_divmod(a.x, u_h);
    vec2 c = pg_divmod(b.x, u_c);
    float x = a.y;
    float y = b.y;
    float ch = c.y;
    float n = c.x;
    float kk = u_kh * u_kw;
    float acc = 0.0;
    for (float ki = 0.0; ki < MAX_WINDOW; ki += 1.0) {
        if (ki >= u_kh) break;
        float ty = y + u_ph - ki;
        if (ty < 0.0) continue;
        vec2 qy = pg_divmod(ty, u_sh);
        if (qy.y != 0.0 || qy.x >= u_oh) continue;
        for (float kj = 0.0; kj < MAX_WINDOW; kj += 1.0) {
            if (kj >= u_kw) break;
            float tx = x + u_pw - kj;
            if (tx < 0.0) continue;
            vec2 qx = pg_divmod(tx, u_sw);
            if (qx.y != 0.0 || qx.x >= u_ow) continue;
            float row = (n * u_c + ch) * kk + ki * u_kw + kj;
            acc += fetch(u_x, u_x_size, row * (u_oh * u_ow) + qy.x * u_ow + qx.x);
        }
    }
    return acc;
}
