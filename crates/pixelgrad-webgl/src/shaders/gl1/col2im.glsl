// Op::Col2Im as a gather (as shaders/col2im.glsl): each pixel visits only the windows covering
// it, at most min(ceil(k / stride), output side) per axis, in ascending kernel (i, j) order.
// The loops have the constant bound MAX_WINDOW and break at the windows' count; the backend
// refuses more covering windows than that.
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
    float ty = b.y + u_ph;
    float tx = a.y + u_pw;
    float kk = u_kh * u_kw;
    // The windows covering the pixel: rows oy_hi down to oy_lo (kernel row ty - oy * sh
    // ascending), columns likewise.
    float oy_hi = min(pg_divmod(ty, u_sh).x, u_oh - 1.0);
    float oy_lo = ty >= u_kh ? pg_divmod(ty - u_kh, u_sh).x + 1.0 : 0.0;
    float ox_hi = min(pg_divmod(tx, u_sw).x, u_ow - 1.0);
    float ox_lo = tx >= u_kw ? pg_divmod(tx - u_kw, u_sw).x + 1.0 : 0.0;
    float base = (c.x * u_c + c.y) * kk;
    float acc = 0.0;
    for (float dy = 0.0; dy < MAX_WINDOW; dy += 1.0) {
        float oy = oy_hi - dy;
        if (oy < oy_lo) break;
        float ki = ty - oy * u_sh;
        for (float dx = 0.0; dx < MAX_WINDOW; dx += 1.0) {
            float ox = ox_hi - dx;
            if (ox < ox_lo) break;
            float row = base + ki * u_kw + tx - ox * u_sw;
            acc += fetch(u_x, u_x_size, row * (u_oh * u_ow) + oy * u_ow + ox);
        }
    }
    return acc;
}
