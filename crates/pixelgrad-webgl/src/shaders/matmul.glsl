// Op::MatMul, batched: out[b, m, n] = sum_k A[b, m, k] * B[b, k, n]. Each fragment writes one
// texel, i.e. 4 consecutive outputs. Element (b, m, k) of A is at b*u_a_sb + m*u_a_sm + k, i.e.
// A's k axis is always contiguous and its rows start on a texel (matmul.rs repacks A otherwise),
// so one texel of A holds 4 consecutive k. B comes in one of two forms:
// CONFIG 0 ("nn"): B[b, k, n] at b*u_b_sb + k*u_b_sk + n with N % 4 == 0 and rows texel-aligned:
//   the 4 outputs share (b, m), one texel of B holds their 4 columns of one row k, so each step
//   of 4 k reads 1 texel of A and 4 of B for 16 multiply-adds.
// CONFIG 1 ("nt"): B[b, k, n] at b*u_b_sb + n*u_b_sn + k with k contiguous, rows texel-aligned
//   and zero-padded to a multiple of 4 (as A's are), N % 4 == 0: 1 texel of A and 4 of B (one per
//   output column) per 4 k, as dot products.
// CONFIG 2 ("nt_any"): as 1 for any N: the 4 outputs may lie in different rows (and batches), so
//   each has its own A row too: 8 texels per 4 k.
// CONFIG 3 ("strided"): any strides on both operands, one element per fetch (small products).
// CONFIG 4 ("nt_shift"): as 2 with rows that need not start on a texel (no packing pass).
// CONFIG 5 ("nn_shift"): as 0 with A's rows starting anywhere (no packing pass).
//
// Speed (software rasterisers such as SwiftShader and llvmpipe run this on the CPU): texel
// fetches and integer division dominate. No division runs per step: each operand row is a stream
// of texel coordinates advanced by a fixed (dx, dy) with one carry, computed once per fragment.
//
// GLSL ES 3.00 only: the webgl1 mode draws the program rendered from the product's one
// definition (pixelgrad_core::kernel::products, ops/matmul_rendered.rs), which is what this
// file's ES 1.00 section was, written by hand, and measured the same.
//
// Kept for a measured speed: against that rendered program (one output per fragment, two
// element fetches per multiply-add, each with an integer division for its texel) on
// llvmpipe, WebGL2, rendered / this: 34.6x at a decode [1,1024]x[1024,1024] (nn), 20.8x
// with B transposed (nt), 9.3x at a conv1 product [16,9]x[32,9,784] (nn_shift), 4.7x at
// [64,10]x[256,10]^T (nt_shift), 6.1x at [128,128]x[128,10] (pack + nt_any), 2.6x at a
// product summed over its batch [8,16,64]x[8,32,64]^T (strided, u_reps 8; the program
// needs a reduction after it); tiny products ([9,10]x[10,7], strided) 1.05 to 1.17
// (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
SAMPLER(u_a, u_a_size);
SAMPLER(u_b, u_b_size);
uniform INDEX u_m;
uniform INDEX u_n;
uniform INDEX u_k;
uniform INDEX u_a_sb;
uniform INDEX u_a_sm;
uniform INDEX u_a_sk;
uniform INDEX u_b_sb;
uniform INDEX u_b_sk;
uniform INDEX u_b_sn;

uniform int u_reps;

// The 4 consecutive elements starting at component c (0..3) of texel a, running on into the
// next texel b.
vec4 shifted(vec4 a, vec4 b, int c) {
    return c == 0 ? a : (c == 1 ? vec4(a.yzw, b.x) : (c == 2 ? vec4(a.zw, b.xy) : vec4(a.w, b.xyz)));
}

// Where output base + j (the last output past the end) starts reading: element offsets of
// its A row (ea) and of its B column, a B^T row in CONFIG 2 and 4 (eb).
void operand_starts(int base, int j, out int ea, out int eb) {
    int i = min(base + j, u_out_n - 1);
    int n = i % u_n;
    int t = i / u_n;
    int m = t % u_m;
    int b = t / u_m;
    ea = b * u_a_sb + m * u_a_sm;
    eb = b * u_b_sb + n * u_b_sn;
}

// Component c (0..3) of v, without dynamic vector indexing.
float component(vec4 v, int c) {
    return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w));
}

// Moves a stream of elements (texel p, component c) forward by one stride: d is the stride's
// whole texels (step_of), r its remainder in elements (stride & 3).
void stream_next(inout ivec2 p, inout int c, ivec2 d, int r, int w) {
    p = advance(p, d, w);
    c += r;
    if (c >= 4) {
        c -= 4;
        p = advance(p, ivec2(1, 0), w);
    }
}

void main() {
    int base = out_base();
    if (base >= u_out_n) {
        // Spare texels of the last texture row: nothing to compute.
        o_color = vec4(0.0);
#ifdef PG_EPILOGUE
        o_color1 = vec4(0.0);
#endif
        return;
    }
    int wa = textureSize(u_a, 0).x;
    int wb = textureSize(u_b, 0).x;
    vec4 acc = vec4(0.0);
#if CONFIG == 0 || CONFIG == 1 || CONFIG == 5
    int n = base % u_n;
    int t = base / u_n;
    int m = t % u_m;
    int b = t / u_m;
    int ea = b * u_a_sb + m * u_a_sm;
    ivec2 pa = texel_at(ea >> 2, wa);
    ivec2 one = ivec2(1, 0);
#endif
#if CONFIG == 5
    // CONFIG 5 ("nn_shift"): as 0 with A's row starting anywhere in a texel (a [16, 9]
    // convolution weight): streamed a texel ahead and shifted, as CONFIG 4 reads its rows.
    int ca = ea & 3;
    vec4 qa = texelFetch(u_a, pa, 0);
    pa = advance(pa, one, wa);
#define A_NEXT(av) { vec4 na = texelFetch(u_a, pa, 0); pa = advance(pa, one, wa); av = shifted(qa, na, ca); qa = na; }
#else
#define A_NEXT(av) { av = texelFetch(u_a, pa, 0); pa = advance(pa, one, wa); }
#endif
#if CONFIG == 0 || CONFIG == 5
    ivec2 pb = texel_at((b * u_b_sb + n) >> 2, wb);
    ivec2 db = step_of(u_b_sk >> 2, wb);
    int steps = u_k >> 2;
    for (int q = 0; q < steps; ++q) {
        vec4 av;
        A_NEXT(av);
        vec4 b0 = texelFetch(u_b, pb, 0);
        pb = advance(pb, db, wb);
        vec4 b1 = texelFetch(u_b, pb, 0);
        pb = advance(pb, db, wb);
        vec4 b2 = texelFetch(u_b, pb, 0);
        pb = advance(pb, db, wb);
        vec4 b3 = texelFetch(u_b, pb, 0);
        pb = advance(pb, db, wb);
        acc += av.x * b0;
        acc += av.y * b1;
        acc += av.z * b2;
        acc += av.w * b3;
    }
    // The last K % 4 rows of B: A's texel is complete (padded), B's missing rows are not read.
    int rem = u_k & 3;
    if (rem > 0) {
        vec4 av;
        A_NEXT(av);
        acc += av.x * texelFetch(u_b, pb, 0);
        if (rem > 1) {
            pb = advance(pb, db, wb);
            acc += av.y * texelFetch(u_b, pb, 0);
        }
        if (rem > 2) {
            pb = advance(pb, db, wb);
            acc += av.z * texelFetch(u_b, pb, 0);
        }
    }
#elif CONFIG == 1
    int rb = b * u_b_sb + n * u_b_sn;
    ivec2 pb0 = texel_at(rb >> 2, wb);
    ivec2 pb1 = texel_at((rb + u_b_sn) >> 2, wb);
    ivec2 pb2 = texel_at((rb + 2 * u_b_sn) >> 2, wb);
    ivec2 pb3 = texel_at((rb + 3 * u_b_sn) >> 2, wb);
    int steps = (u_k + 3) >> 2;
    for (int q = 0; q < steps; ++q) {
        vec4 av = texelFetch(u_a, pa, 0);
        pa = advance(pa, one, wa);
        acc.x += dot(av, texelFetch(u_b, pb0, 0));
        acc.y += dot(av, texelFetch(u_b, pb1, 0));
        acc.z += dot(av, texelFetch(u_b, pb2, 0));
        acc.w += dot(av, texelFetch(u_b, pb3, 0));
        pb0 = advance(pb0, one, wb);
        pb1 = advance(pb1, one, wb);
        pb2 = advance(pb2, one, wb);
        pb3 = advance(pb3, one, wb);
    }
#elif CONFIG == 2 || CONFIG == 4
    // CONFIG 4 ("nt_shift"): rows with k contiguous that need not start on a texel (a [M, 10]
    // gradient, a [N, 10] weight read as B^T): each row is streamed a texel ahead and its 4
    // values are the two texels it straddles shifted by its start's offset (one fetch per
    // step, as for aligned rows); past K the values are zeroed (neighbouring rows lie there).
    int ea0, ea1, ea2, ea3, eb0, eb1, eb2, eb3;
    operand_starts(base, 0, ea0, eb0);
    operand_starts(base, 1, ea1, eb1);
    operand_starts(base, 2, ea2, eb2);
    operand_starts(base, 3, ea3, eb3);
    ivec2 pa0 = texel_at(ea0 >> 2, wa), pa1 = texel_at(ea1 >> 2, wa), pa2 = texel_at(ea2 >> 2, wa), pa3 = texel_at(ea3 >> 2, wa);
    ivec2 pb0 = texel_at(eb0 >> 2, wb), pb1 = texel_at(eb1 >> 2, wb), pb2 = texel_at(eb2 >> 2, wb), pb3 = texel_at(eb3 >> 2, wb);
#if CONFIG == 4
    int ca0 = ea0 & 3, ca1 = ea1 & 3, ca2 = ea2 & 3, ca3 = ea3 & 3;
    int cb0 = eb0 & 3, cb1 = eb1 & 3, cb2 = eb2 & 3, cb3 = eb3 & 3;
#endif
    ivec2 one = ivec2(1, 0);
    int steps = (u_k + 3) >> 2;
#if CONFIG == 2
    for (int q = 0; q < steps; ++q) {
        acc.x += dot(texelFetch(u_a, pa0, 0), texelFetch(u_b, pb0, 0));
        acc.y += dot(texelFetch(u_a, pa1, 0), texelFetch(u_b, pb1, 0));
        acc.z += dot(texelFetch(u_a, pa2, 0), texelFetch(u_b, pb2, 0));
        acc.w += dot(texelFetch(u_a, pa3, 0), texelFetch(u_b, pb3, 0));
        pa0 = advance(pa0, one, wa);
        pa1 = advance(pa1, one, wa);
        pa2 = advance(pa2, one, wa);
        pa3 = advance(pa3, one, wa);
        pb0 = advance(pb0, one, wb);
        pb1 = advance(pb1, one, wb);
        pb2 = advance(pb2, one, wb);
        pb3 = advance(pb3, one, wb);
    }
#else
    vec4 qa0 = texelFetch(u_a, pa0, 0), qa1 = texelFetch(u_a, pa1, 0), qa2 = texelFetch(u_a, pa2, 0), qa3 = texelFetch(u_a, pa3, 0);
    vec4 qb0 = texelFetch(u_b, pb0, 0), qb1 = texelFetch(u_b, pb1, 0), qb2 = texelFetch(u_b, pb2, 0), qb3 = texelFetch(u_b, pb3, 0);
    // The tail of the last step: components k < K kept.
    bvec4 tail = lessThan(ivec4(0, 1, 2, 3), ivec4(((u_k - 1) & 3) + 1));
    for (int q = 0; q < steps; ++q) {
        pa0 = advance(pa0, one, wa);
        pa1 = advance(pa1, one, wa);
        pa2 = advance(pa2, one, wa);
        pa3 = advance(pa3, one, wa);
        pb0 = advance(pb0, one, wb);
        pb1 = advance(pb1, one, wb);
        pb2 = advance(pb2, one, wb);
        pb3 = advance(pb3, one, wb);
        vec4 na0 = texelFetch(u_a, pa0, 0), na1 = texelFetch(u_a, pa1, 0), na2 = texelFetch(u_a, pa2, 0), na3 = texelFetch(u_a, pa3, 0);
        vec4 nb0 = texelFetch(u_b, pb0, 0), nb1 = texelFetch(u_b, pb1, 0), nb2 = texelFetch(u_b, pb2, 0), nb3 = texelFetch(u_b, pb3, 0);
        vec4 a0 = shifted(qa0, na0, ca0), a1 = shifted(qa1, na1, ca1), a2 = shifted(qa2, na2, ca2), a3 = shifted(qa3, na3, ca3);
        vec4 b0 = shifted(qb0, nb0, cb0), b1 = shifted(qb1, nb1, cb1), b2 = shifted(qb2, nb2, cb2), b3 = shifted(qb3, nb3, cb3);
        if (q == steps - 1) {
            vec4 z = vec4(0.0);
            a0 = mix(z, a0, tail); a1 = mix(z, a1, tail); a2 = mix(z, a2, tail); a3 = mix(z, a3, tail);
            b0 = mix(z, b0, tail); b1 = mix(z, b1, tail); b2 = mix(z, b2, tail); b3 = mix(z, b3, tail);
        }
        acc.x += dot(a0, b0);
        acc.y += dot(a1, b1);
        acc.z += dot(a2, b2);
        acc.w += dot(a3, b3);
        qa0 = na0; qa1 = na1; qa2 = na2; qa3 = na3;
        qb0 = nb0; qb1 = nb1; qb2 = nb2; qb3 = nb3;
    }
#endif
#else
    // CONFIG 3 ("strided"): A[b, m, k] at b*u_a_sb + m*u_a_sm + k*u_a_sk and B as in CONFIG 1
    // with any u_b_sk, element by element: no operand needs a packing pass, for products too
    // small to repay one (matmul.rs). Each of the 4 outputs walks its own A row and B column
    // as a stream of (texel, component) positions advanced without division.
    // u_reps > 1: a product summed over its batch (the output has no batch axis, so b == 0):
    // each output adds its row times column of every batch entry.
    int ia0, ia1, ia2, ia3, ib0, ib1, ib2, ib3;
    operand_starts(base, 0, ia0, ib0);
    operand_starts(base, 1, ia1, ib1);
    operand_starts(base, 2, ia2, ib2);
    operand_starts(base, 3, ia3, ib3);
    ivec2 da = step_of(u_a_sk >> 2, wa);
    ivec2 db = step_of(u_b_sk >> 2, wb);
    int ra = u_a_sk & 3;
    int rb = u_b_sk & 3;
    for (int r = 0; r < u_reps; ++r) {
        ivec2 pa0 = texel_at(ia0 >> 2, wa), pa1 = texel_at(ia1 >> 2, wa), pa2 = texel_at(ia2 >> 2, wa), pa3 = texel_at(ia3 >> 2, wa);
        ivec2 pb0 = texel_at(ib0 >> 2, wb), pb1 = texel_at(ib1 >> 2, wb), pb2 = texel_at(ib2 >> 2, wb), pb3 = texel_at(ib3 >> 2, wb);
        int ca0 = ia0 & 3, ca1 = ia1 & 3, ca2 = ia2 & 3, ca3 = ia3 & 3;
        int cb0 = ib0 & 3, cb1 = ib1 & 3, cb2 = ib2 & 3, cb3 = ib3 & 3;
        for (int q = 0; q < u_k; ++q) {
            acc.x += component(texelFetch(u_a, pa0, 0), ca0) * component(texelFetch(u_b, pb0, 0), cb0);
            acc.y += component(texelFetch(u_a, pa1, 0), ca1) * component(texelFetch(u_b, pb1, 0), cb1);
            acc.z += component(texelFetch(u_a, pa2, 0), ca2) * component(texelFetch(u_b, pb2, 0), cb2);
            acc.w += component(texelFetch(u_a, pa3, 0), ca3) * component(texelFetch(u_b, pb3, 0), cb3);
            stream_next(pa0, ca0, da, ra, wa);
            stream_next(pa1, ca1, da, ra, wa);
            stream_next(pa2, ca2, da, ra, wa);
            stream_next(pa3, ca3, da, ra, wa);
            stream_next(pb0, cb0, db, rb, wb);
            stream_next(pb1, cb1, db, rb, wb);
            stream_next(pb2, cb2, db, rb, wb);
            stream_next(pb3, cb3, db, rb, wb);
        }
        ia0 += u_a_sb;
        ia1 += u_a_sb;
        ia2 += u_a_sb;
        ia3 += u_a_sb;
        ib0 += u_b_sb;
        ib1 += u_b_sb;
        ib2 += u_b_sb;
        ib3 += u_b_sb;
    }
#endif
#ifdef PG_EPILOGUE
    // The fused computation that reads the product (dialect::MATMUL_EPI), as a second output.
    o_color1 = PG_H4(pg_epilogue(base, acc));
#endif
    o_color = PG_H4(acc);
}
