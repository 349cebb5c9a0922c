// Op::DepthwiseConv: x [N, C, H, W] and k [C, 1, kh, kw] -> [N, C, OH, OW], one filter per
// channel: out[n, c, oy, ox] = sum over taps (i, j), in that order, of
// x[n, c, oy*sh + i - ph, ox*sw + j - pw] * k[c, 0, i, j], taps in the padding skipped (never
// visited: the loops run over `tap_range`).
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
    int ys = (p / u_ow) * u_sh;
    int xs = (p % u_ow) * u_sw;
    // Only the taps inside the image: at most H x W however large the window.
    ivec2 r = tap_range(ys, u_kh, u_ph, u_h);
    ivec2 q = tap_range(xs, u_kw, u_pw, u_w);
    int src = plane * u_h * u_w + xs - u_pw;
    int taps = c * u_kh * u_kw;
    float acc = 0.0;
    for (int ki = r.x; ki < r.y; ki++) {
        int row = src + (ys + ki - u_ph) * u_w;
        int tap = taps + ki * u_kw;
        for (int kj = q.x; kj < q.y; kj++) {
            acc += fetch(u_x, row + kj) * fetch(u_k, tap + kj);
        }
    }
    return acc;
}
