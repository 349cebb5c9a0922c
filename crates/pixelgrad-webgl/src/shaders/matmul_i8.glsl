// Op::MatMulI8: out[g, m, n] = float(sum_k a[g, m, k] * int(b[g, k, n])), 8-bit weights a
// read with integer fetches, every product and sum in 32-bit int arithmetic (GLSL ES 3.00
// highp int: overflow keeps the low 32 bits, i.e. it wraps like Rust's wrapping i32).
// CONFIG bit 0: weights u8 (RGBA8UI) instead of i8 (RGBA8I); bit 1: N is a multiple of 4, so
// a fragment's 4 outputs share one row of a and read b a whole texel at a time.
#if (CONFIG & 1) == 0
uniform highp isampler2D u_a;
#else
uniform highp usampler2D u_a;
#endif
uniform highp sampler2D u_b;
uniform int u_m;
uniform int u_n;
uniform int u_k;
// Element offsets between batch entries (0: broadcast).
uniform int u_a_stride;
uniform int u_b_stride;

int fetch_a(int i) {
    int t = i >> 2;
    int w = textureSize(u_a, 0).x;
    int k = i & 3;
#if (CONFIG & 1) == 0
    ivec4 v = texelFetch(u_a, ivec2(t % w, t / w), 0);
    return k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w));
#else
    uvec4 v = texelFetch(u_a, ivec2(t % w, t / w), 0);
    return int(k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w)));
#endif
}

// Rust's `x as i32`: truncation toward zero, saturating, NaN gives 0 (GLSL leaves int() of
// out-of-range values undefined, so those are handled first, NaN by its bits).
int to_i32(float x) {
    if ((floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u) return 0;
    if (x >= 2147483648.0) return 0x7fffffff;
    if (x <= -2147483648.0) return int(0x80000000u);
    return int(x);
}

ivec4 to_i32(vec4 v) {
    return ivec4(to_i32(v.x), to_i32(v.y), to_i32(v.z), to_i32(v.w));
}

// One output element (flat index i).
int dot_row(int i) {
    int n = i % u_n;
    int r = i / u_n;
    int m = r % u_m;
    int g = r / u_m;
    int ao = g * u_a_stride + m * u_k;
    int bo = g * u_b_stride + n;
    int acc = 0;
    for (int k = 0; k < u_k; ++k) {
        acc += fetch_a(ao + k) * to_i32(fetch(u_b, bo + k * u_n));
    }
    return acc;
}

void main() {
    int base = out_base();
    ivec4 acc = ivec4(0);
#if (CONFIG & 2) != 0
    // N % 4 == 0: the 4 outputs are columns n..n+3 of one row, and b's row segment is texel
    // (bo + k * N) / 4 (bo, N and the batch stride are multiples of 4).
    if (base < u_out_n) {
        int n = base % u_n;
        int r = base / u_n;
        int m = r % u_m;
        int g = r / u_m;
        int ao = g * u_a_stride + m * u_k;
        int bt = (g * u_b_stride + n) >> 2;
        int nt = u_n >> 2;
        for (int k = 0; k < u_k; ++k) {
            acc += fetch_a(ao + k) * to_i32(fetch4(u_b, bt + k * nt));
        }
    }
#else
    if (base + 0 < u_out_n) acc.x = dot_row(base + 0);
    if (base + 1 < u_out_n) acc.y = dot_row(base + 1);
    if (base + 2 < u_out_n) acc.z = dot_row(base + 2);
    if (base + 3 < u_out_n) acc.w = dot_row(base + 3);
#endif
    o_color = vec4(acc);
}
