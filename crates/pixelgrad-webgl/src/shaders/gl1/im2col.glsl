// Op::Im2Col (as shaders/im2col.glsl): input [N, C, H, W] -> [N, C*kh*kw, OH*OW].
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
    float ohw = u_oh * u_ow;
    float kk = u_kh * u_kw;
    vec2 a = pg_divmod(i, ohw);
    vec2 b = pg_divmod(a.x, u_c * kk);
    float p = a.y;
    float n = b.x;
    vec2 rc = pg_divmod(b.y, kk);
    vec2 kij = pg_divmod(rc.y, u_kw);
    vec2 pyx = pg_divmod(p, u_ow);
    float y = pyx.x * u_sh + kij.x - u_ph;
    float x = pyx.y * u_sw + kij.y - u_pw;
    if (y < 0.0 || y >= u_h || x < 0.0 || x >= u_w) return 0.0;
    return fetch(u_x, u_x_size, ((n * u_c + rc.x) * u_h + y) * u_w + x);
}
