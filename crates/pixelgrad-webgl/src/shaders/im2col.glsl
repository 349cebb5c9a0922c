// Op::Im2Col: input [N, C, H, W] -> [N, C*kh*kw, OH*OW]; row c*kh*kw + i*kw + j, column
// oy*OW + ox holds x[n, c, oy*sh + i - ph, ox*sw + j - pw] (0 in the padding).
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

float compute(int i) {
    int ohw = u_oh * u_ow;
    int kk = u_kh * u_kw;
    int p = i % ohw;
    int r = (i / ohw) % (u_c * kk);
    int n = i / (ohw * u_c * kk);
    int c = r / kk;
    int ki = (r % kk) / u_kw;
    int kj = r % u_kw;
    int y = (p / u_ow) * u_sh + ki - u_ph;
    int x = (p % u_ow) * u_sw + kj - u_pw;
    if (y < 0 || y >= u_h || x < 0 || x >= u_w) return 0.0;
    return fetch(u_x, ((n * u_c + c) * u_h + y) * u_w + x);
}
