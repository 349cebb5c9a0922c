// Op::DepthwiseConv: x [N, C, H, W] and k [C, 1, kh, kw] -> [N, C, OH, OW], one filter per
// channel: out[n, c, oy, ox] = sum over taps (i, j), in that order, of
// x[n, c, oy*sh + i - ph, ox*sw + j - pw] * k[c, 0, i, j], taps in the padding skipped.
uniform highp sampler2D u_x;
uniform highp sampler2D u_k;
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
    int p = i % ohw;
    int plane = i / ohw;
    int c = plane % u_c;
    int y0 = (p / u_ow) * u_sh - u_ph;
    int x0 = (p % u_ow) * u_sw - u_pw;
    int src = plane * u_h * u_w;
    int taps = c * u_kh * u_kw;
    float acc = 0.0;
    for (int ki = 0; ki < u_kh; ki++) {
        int y = y0 + ki;
        if (y < 0 || y >= u_h) continue;
        for (int kj = 0; kj < u_kw; kj++) {
            int x = x0 + kj;
            if (x < 0 || x >= u_w) continue;
            acc += fetch(u_x, src + y * u_w + x) * fetch(u_k, taps + ki * u_kw + kj);
        }
    }
    return acc;
}
