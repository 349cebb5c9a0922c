// Assembles matmul_block.glsl's 4 render targets into the flat output out[b, m, n]: element
// (b, m, n) is component n % 4 of texel (b*u_mb + m/4)*u_nb + n/4 of target m % 4.
// CONFIG 0: N % 4 == 0, so a texel's 4 outputs are one texel of one target. CONFIG 1: any N.
// Kept for a measured speed: the last pass of the block path, whose time (with
// matmul_block.glsl's) beat the program rendered from the product's one definition 16x to
// 56x on llvmpipe, WebGL2, at the shapes the benches use (55.8x at [128,784]x[784,128],
// 47.7x at 1024^3) (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
uniform highp sampler2D u_c0;
uniform highp sampler2D u_c1;
uniform highp sampler2D u_c2;
uniform highp sampler2D u_c3;
uniform int u_m;
uniform int u_n;
uniform int u_mb;
uniform int u_nb;

// Texel s of target r.
vec4 target(int r, int s) {
    return r == 0 ? fetch4(u_c0, s) : (r == 1 ? fetch4(u_c1, s) : (r == 2 ? fetch4(u_c2, s) : fetch4(u_c3, s)));
}

float pick(vec4 v, int c) {
    return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w));
}

void main() {
    int base = out_base();
    vec4 r = vec4(0.0);
#if CONFIG == 0
    if (base < u_out_n) {
        int n = base % u_n;
        int t = base / u_n;
        int m = t % u_m;
        int b = t / u_m;
        r = target(m & 3, (b * u_mb + (m >> 2)) * u_nb + (n >> 2));
    }
#else
    // The texel's 4 outputs are consecutive (b, m, n): index the first once and step the rest,
    // fetching a target's texel only when (m, n / 4) moves on (at most twice within a row).
    if (base < u_out_n) {
        int n = base % u_n;
        int t = base / u_n;
        int m = t % u_m;
        int b = t / u_m;
        int last = -1;
        vec4 v = vec4(0.0);
        for (int j = 0; j < 4; j++) {
            if (base + j < u_out_n) {
                int key = ((b * u_mb + (m >> 2)) * u_nb + (n >> 2)) * 4 + (m & 3);
                if (key != last) {
                    v = target(m & 3, key >> 2);
                    last = key;
                }
                r[j] = pick(v, n & 3);
            }
            n += 1;
            if (n == u_n) {
                n = 0;
                m += 1;
                if (m == u_m) {
                    m = 0;
                    b += 1;
                }
            }
        }
    }
#endif
#ifdef PG_EPILOGUE
    // The fused computation that reads the product (dialect::MATMUL_UNBLOCK_EPI).
    o_color1 = PG_H4(pg_epilogue(base, r));
#endif
    o_color = PG_H4(r);
}
