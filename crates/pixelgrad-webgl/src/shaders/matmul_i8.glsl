// Op::MatMulI8: out[g, m, n] = float(sum_k a[g, m, k] * int(b[g, k, n])), 8-bit weights a
// read with integer fetches, every product and sum in 32-bit int arithmetic (GLSL ES 3.00
// highp int: overflow keeps the low 32 bits, i.e. it wraps like Rust's wrapping i32).
//
// N is a multiple of 4 (matmul_i8.rs pads b's columns with zeros otherwise), so a fragment's
// 4 outputs are columns n..n+3 of one row of one batch entry: one row of a, and one texel of b
// per k. CONFIG bit 0: weights u8 (RGBA8UI) instead of i8 (RGBA8I); bit 1: K is a multiple of
// 4, so a's rows start on a texel and each step of 4 k reads 1 texel of a and 4 of b for 16
// multiply-adds. As in matmul.glsl, no division runs per step: each operand is a stream of
// texel coordinates advanced by a fixed (dx, dy) with one carry.
// Kept for exact arithmetic and a measured speed: the one-definition alternative (the
// weight widened to f32, then the f32 product) rounds once a partial sum passes 2^24, where
// this kernel's int sums are exact (wrapping). On llvmpipe, WebGL2, widen + the rendered
// product / this: 17.8x at [128,784]x[784,128], 23.3x at [1024,1024]x[1024,4]; widen + the
// hand-written f32 product / this: 2.24x at [1024,1024]x[1024,4], but 0.12 at
// [128,784]x[784,128] (the f32 product takes the 4x4-block path, this kernel has none)
// (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
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

ivec4 fetch_a4(ivec2 p) {
    return ivec4(texelFetch(u_a, p, 0));
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

void main() {
    int base = out_base();
    if (base >= u_out_n) {
        // Spare texels of the last texture row: nothing to compute.
        o_color = vec4(0.0);
        return;
    }
    int wa = textureSize(u_a, 0).x;
    int wb = textureSize(u_b, 0).x;
    int n = base % u_n;
    int r = base / u_n;
    int m = r % u_m;
    int g = r / u_m;
    int ao = g * u_a_stride + m * u_k;
    // b's row segment n..n+3 of row k is texel (bo + k * N) / 4: bo, N and the batch stride
    // are multiples of 4.
    ivec2 pb = texel_at((g * u_b_stride + n) >> 2, wb);
    ivec2 db = step_of(u_n >> 2, wb);
    ivec2 one = ivec2(1, 0);
    ivec2 pa = texel_at(ao >> 2, wa);
    ivec4 acc = ivec4(0);
#if (CONFIG & 2) != 0
    int steps = u_k >> 2;
    for (int q = 0; q < steps; ++q) {
        ivec4 av = fetch_a4(pa);
        pa = advance(pa, one, wa);
        ivec4 b0 = to_i32(texelFetch(u_b, pb, 0));
        pb = advance(pb, db, wb);
        ivec4 b1 = to_i32(texelFetch(u_b, pb, 0));
        pb = advance(pb, db, wb);
        ivec4 b2 = to_i32(texelFetch(u_b, pb, 0));
        pb = advance(pb, db, wb);
        ivec4 b3 = to_i32(texelFetch(u_b, pb, 0));
        pb = advance(pb, db, wb);
        acc += av.x * b0 + av.y * b1 + av.z * b2 + av.w * b3;
    }
#else
    // a's row starts at channel ao & 3 of its first texel; the next texel is fetched when the
    // channel wraps.
    int c = ao & 3;
    ivec4 av = fetch_a4(pa);
    for (int k = 0; k < u_k; ++k) {
        int a = c == 0 ? av.x : (c == 1 ? av.y : (c == 2 ? av.z : av.w));
        acc += a * to_i32(texelFetch(u_b, pb, 0));
        pb = advance(pb, db, wb);
        c += 1;
        if (c == 4) {
            c = 0;
            pa = advance(pa, one, wa);
            if (k + 1 < u_k) av = fetch_a4(pa);
        }
    }
#endif
    o_color = vec4(acc);
}
