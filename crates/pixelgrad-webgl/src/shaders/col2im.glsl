// Op::Col2Im as a gather: output pixel (n, c, y, x) sums every column entry whose window
// position covers it: kernel offsets (i, j) with y + ph - i = oy*sh and x + pw - j = ox*sw.
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
    int x = i % u_w;
    int y = (i / u_w) % u_h;
    int c = (i / (u_w * u_h)) % u_c;
    int n = i / (u_w * u_h * u_c);
    int kk = u_kh * u_kw;
    float acc = 0.0;
    for (int ki = 0; ki < u_kh; ++ki) {
        int ty = y + u_ph - ki;
        if (ty < 0 || ty % u_sh != 0) continue;
        int oy = ty / u_sh;
        if (oy >= u_oh) continue;
        for (int kj = 0; kj < u_kw; ++kj) {
            int tx = x + u_pw - kj;
            if (tx < 0 || tx % u_sw != 0) continue;
            int ox = tx / u_sw;
            if (ox >= u_ow) continue;
            int row = (n * u_c + c) * kk + ki * u_kw + kj;
            acc += fetch(u_x, row * (u_oh * u_ow) + oy * u_ow + ox);
        }
    }
    return acc;
}
