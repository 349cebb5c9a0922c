// Op::Col2Im as a gather: output pixel (n, c, y, x) sums every column entry whose window
// position covers it: kernel offsets (i, j) with y + ph - i = oy*sh and x + pw - j = ox*sw,
// visiting only those windows.
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

// Output pixel (n, c, y, x): the sum over the windows covering it, in ascending (i, j) order.
// With t = y + ph, the windows covering row y are those at rows oy with oy * sh <= t <
// oy * sh + kh and oy < OH: from min(t / sh, OH - 1) down to ceil((t + 1 - kh) / sh), at most
// min(ceil(kh / sh), OH) of them however large the window, at kernel row i = t - oy * sh
// (CONFIG 1: stride 1, no division at all).
float col2im_at(int n, int c, int y, int x) {
    int kk = u_kh * u_kw;
    int ty = y + u_ph;
    int tx = x + u_pw;
#if CONFIG == 1
    int oy_hi = min(ty, u_oh - 1);
    int oy_lo = max(ty + 1 - u_kh, 0);
    int ox_hi = min(tx, u_ow - 1);
    int ox_lo = max(tx + 1 - u_kw, 0);
#else
    int oy_hi = min(ty / u_sh, u_oh - 1);
    int oy_lo = ty >= u_kh ? (ty - u_kh) / u_sh + 1 : 0;
    int ox_hi = min(tx / u_sw, u_ow - 1);
    int ox_lo = tx >= u_kw ? (tx - u_kw) / u_sw + 1 : 0;
#endif
    float acc = 0.0;
    for (int oy = oy_hi; oy >= oy_lo; --oy) {
        int ki = ty - oy * u_sh;
        for (int ox = ox_hi; ox >= ox_lo; --ox) {
            int row = (n * u_c + c) * kk + ki * u_kw + tx - ox * u_sw;
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
