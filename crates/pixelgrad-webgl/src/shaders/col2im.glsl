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

// Output pixel (n, c, y, x): the sum over the windows covering it (CONFIG 1: stride 1, so
// no division per window tap).
float col2im_at(int n, int c, int y, int x) {
    int kk = u_kh * u_kw;
    float acc = 0.0;
    for (int ki = 0; ki < u_kh; ++ki) {
        int ty = y + u_ph - ki;
#if CONFIG == 1
        int oy = ty;
        if (ty < 0 || oy >= u_oh) continue;
#else
        if (ty < 0 || ty % u_sh != 0) continue;
        int oy = ty / u_sh;
        if (oy >= u_oh) continue;
#endif
        for (int kj = 0; kj < u_kw; ++kj) {
            int tx = x + u_pw - kj;
#if CONFIG == 1
            int ox = tx;
            if (tx < 0 || ox >= u_ow) continue;
#else
            if (tx < 0 || tx % u_sw != 0) continue;
            int ox = tx / u_sw;
            if (ox >= u_ow) continue;
#endif
            int row = (n * u_c + c) * kk + ki * u_kw + kj;
            acc += fetch(u_x, row * (u_oh * u_ow) + oy * u_ow + ox);
        }
    }
    return acc;
}

float compute(int i) {
    int x = i % u_w;
    int y = (i / u_w) % u_h;
    int c = (i / (u_w * u_h)) % u_c;
    int n = i / (u_w * u_h * u_c);
    return col2im_at(n, c, y, x);
}

// A texel at a time: the first pixel's position decomposed once, the next three stepped
// along the row (carrying into the next row, channel and image); lanes past the end are 0.
#define PG_COMPUTE4
vec4 compute4(int i) {
    int x = i % u_w;
    int t = i / u_w;
    int y = t % u_h;
    t /= u_h;
    int c = t % u_c;
    int n = t / u_c;
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        float e = i + l < u_out_n ? col2im_at(n, c, y, x) : 0.0;
        v = mix(v, vec4(e), equal(ivec4(l), ivec4(0, 1, 2, 3)));
        if (++x == u_w) {
            x = 0;
            if (++y == u_h) {
                y = 0;
                if (++c == u_c) {
                    c = 0;
                    ++n;
                }
            }
        }
    }
    return v;
}
