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

// A texel at a time: the position of its first element is decomposed once, the next three
// step along the row (carrying into the next row, window tap, channel and image) without
// division.
#define PG_COMPUTE4

// Column entry (n, c, ki, kj, oy, ox): 0 in the padding and past the last element `i`.
float im2col_at(int i, int n, int c, int ki, int kj, int oy, int ox) {
    int y = oy * u_sh + ki - u_ph;
    int x = ox * u_sw + kj - u_pw;
    if (i >= u_out_n || y < 0 || y >= u_h || x < 0 || x >= u_w) return 0.0;
    return fetch(u_x, ((n * u_c + c) * u_h + y) * u_w + x);
}

// The position of the next element of the output.
void im2col_next(inout int n, inout int c, inout int ki, inout int kj, inout int oy, inout int ox) {
    if (++ox < u_ow) return;
    ox = 0;
    if (++oy < u_oh) return;
    oy = 0;
    if (++kj < u_kw) return;
    kj = 0;
    if (++ki < u_kh) return;
    ki = 0;
    if (++c < u_c) return;
    c = 0;
    ++n;
}

vec4 compute4(int i) {
    int ohw = u_oh * u_ow;
    int kk = u_kh * u_kw;
    int p = i % ohw;
    int t = i / ohw;
    int r = t % (u_c * kk);
    int n = t / (u_c * kk);
    int c = r / kk;
    int ki = (r - c * kk) / u_kw;
    int kj = r - c * kk - ki * u_kw;
    int oy = p / u_ow;
    int ox = p - oy * u_ow;
    vec4 v;
    v.x = im2col_at(i, n, c, ki, kj, oy, ox);
    im2col_next(n, c, ki, kj, oy, ox);
    v.y = im2col_at(i + 1, n, c, ki, kj, oy, ox);
    im2col_next(n, c, ki, kj, oy, ox);
    v.z = im2col_at(i + 2, n, c, ki, kj, oy, ox);
    im2col_next(n, c, ki, kj, oy, ox);
    v.w = im2col_at(i + 3, n, c, ki, kj, oy, ox);
    return v;
}
