// Matmul on 4x4 output blocks, for large products: one fragment computes rows 4mb .. 4mb+3 by
// columns 4nb .. 4nb+3 of batch b and writes row 4mb+r of the block to render target r (4
// targets, texel t = (b*u_mb + mb)*u_nb + nb); matmul_unblock.glsl then assembles the flat
// output. A and B come from matmul_block_pack.glsl: the 4 texels of A's rows and the 4 of B's
// k rows for one step of 4 k are neighbours in one texture row (the packed textures' widths
// are multiples of 4), so a step is 8 fetches at one coordinate plus 0..3 and 64
// multiply-adds, against 5 fetches for 16 in matmul.glsl: 2.5x fewer fetches per product,
// which is what a software rasteriser (SwiftShader, llvmpipe) spends most of its time on.
//
// CONFIG 1 and 2 read both operands where they lie, with no packing pass: A as rows with k
// contiguous, element (b, m, k) at b*u_a_sb + m*u_a_sm + k, rows starting on a texel; B as
// CONFIG 1 ("nn") rows of N, element (b, k, n) at b*u_b_sb + k*u_b_sk + n (N % 4 == 0), or
// CONFIG 2 ("nt") rows with k contiguous, element (b, n, k) at b*u_b_sb + n*u_b_sn + k. The k
// axis is u_reps runs of u_kin (u_kin % 4 == 0), run r at r*u_a_sb / r*u_b_sb past the first: a
// product summed over its batch (u_reps > 1, the output has no batch axis) or one run
// (u_reps == 1, the output's batch b picks the operands' matrices). A step of 4 k is the same
// 8 fetches as CONFIG 0's, from 5 (nn) or 8 (nt) texel streams advanced without division.
//
// CONFIG 3 ("tn") reads B as CONFIG 1 and A transposed where it lies: A's m contiguous,
// element (b, m, k) at b*u_a_sb + k*u_a_sk + m (u_a_sk % 4 == 0), so a texel holds 4 rows of
// one k (a dense layer's weight gradient x^T dy). A step fetches the 4 texels of k .. k+3 and
// transposes them into the 4 rows' vectors: the same 8 fetches, no repacking pass.
// Kept for a measured speed: the block path (this kernel + matmul_unblock.glsl) against the
// program rendered from the product's one definition, llvmpipe, WebGL2, rendered / block:
// 55.8x at the mnist MLP's [128,784]x[784,128], 39.4x and 36.3x at its two gradient
// products (tn, nt), 17.6x at the cnn's conv2 [32,144]x[32,144,196], 53.0x at its weight
// gradient summed over the batch, 16.4x at 256^3, 47.7x at 1024^3
// (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
layout(location = 1) out vec4 o_color1;
layout(location = 2) out vec4 o_color2;
layout(location = 3) out vec4 o_color3;
uniform highp sampler2D u_a;
uniform highp sampler2D u_b;
uniform int u_mb;
uniform int u_nb;
uniform int u_kq;
// 1 when the operand has a batch axis, 0 when one matrix is broadcast over the batch.
uniform int u_a_batched;
uniform int u_b_batched;
#if CONFIG != 0
uniform int u_m;
uniform int u_n;
uniform int u_kin;
uniform int u_reps;
uniform int u_a_sb;
uniform int u_a_sm;
uniform int u_b_sb;
uniform int u_b_sk;
uniform int u_b_sn;
#endif
#if CONFIG == 3
uniform int u_a_sk;
#endif

void main() {
    int t = out_base() >> 2;
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    if (4 * t < u_out_n) {
        int nb = t % u_nb;
        int s = t / u_nb;
        int mb = s % u_mb;
        int b = s / u_mb;
        int wa = textureSize(u_a, 0).x;
        int wb = textureSize(u_b, 0).x;
#if CONFIG == 0
        ivec2 pa = texel_at(((b * u_a_batched * u_mb + mb) * u_kq) << 2, wa);
        ivec2 pb = texel_at(((b * u_b_batched * u_nb + nb) * u_kq) << 2, wb);
        // Fetches go through texture() at texel centres, not texelFetch: on SwiftShader the
        // filtered path (NEAREST, one level, so it returns the texel exactly) measured ~1.4x
        // faster than texelFetch in this loop. Coordinates stay integer; only the 8 sample
        // points are made normalised, from per-texture steps computed once.
        vec2 ia = 1.0 / vec2(textureSize(u_a, 0));
        vec2 ib = 1.0 / vec2(textureSize(u_b, 0));
        vec2 a1 = vec2(ia.x, 0.0), a2 = vec2(2.0 * ia.x, 0.0), a3 = vec2(3.0 * ia.x, 0.0);
        vec2 b1 = vec2(ib.x, 0.0), b2 = vec2(2.0 * ib.x, 0.0), b3 = vec2(3.0 * ib.x, 0.0);
        vec4 va0, va1, va2, va3, vb0, vb1, vb2, vb3;
        vec2 ua, ub;
        // Two steps per iteration (u_kq is even: the packs pad K to a multiple of 8): the loop's
        // own overhead is a fair share of a step on a software rasteriser.
        for (int q = 0; q < u_kq; q += 2) {
            // Step q.
            ua = (vec2(pa) + 0.5) * ia;
            ub = (vec2(pb) + 0.5) * ib;
            vb0 = texture(u_b, ub);
            vb1 = texture(u_b, ub + b1);
            vb2 = texture(u_b, ub + b2);
            vb3 = texture(u_b, ub + b3);
            va0 = texture(u_a, ua);
            va1 = texture(u_a, ua + a1);
            va2 = texture(u_a, ua + a2);
            va3 = texture(u_a, ua + a3);
            // Widths are multiples of 4: a group of 4 never straddles a texture row.
            pa.x += 4;
            pa = pa.x >= wa ? ivec2(0, pa.y + 1) : pa;
            pb.x += 4;
            pb = pb.x >= wb ? ivec2(0, pb.y + 1) : pb;
            c0 += va0.x * vb0; c0 += va0.y * vb1; c0 += va0.z * vb2; c0 += va0.w * vb3;
            c1 += va1.x * vb0; c1 += va1.y * vb1; c1 += va1.z * vb2; c1 += va1.w * vb3;
            c2 += va2.x * vb0; c2 += va2.y * vb1; c2 += va2.z * vb2; c2 += va2.w * vb3;
            c3 += va3.x * vb0; c3 += va3.y * vb1; c3 += va3.z * vb2; c3 += va3.w * vb3;
            // Step q + 1, the same.
            ua = (vec2(pa) + 0.5) * ia;
            ub = (vec2(pb) + 0.5) * ib;
            vb0 = texture(u_b, ub);
            vb1 = texture(u_b, ub + b1);
            vb2 = texture(u_b, ub + b2);
            vb3 = texture(u_b, ub + b3);
            va0 = texture(u_a, ua);
            va1 = texture(u_a, ua + a1);
            va2 = texture(u_a, ua + a2);
            va3 = texture(u_a, ua + a3);
            pa.x += 4;
            pa = pa.x >= wa ? ivec2(0, pa.y + 1) : pa;
            pb.x += 4;
            pb = pb.x >= wb ? ivec2(0, pb.y + 1) : pb;
            c0 += va0.x * vb0; c0 += va0.y * vb1; c0 += va0.z * vb2; c0 += va0.w * vb3;
            c1 += va1.x * vb0; c1 += va1.y * vb1; c1 += va1.z * vb2; c1 += va1.w * vb3;
            c2 += va2.x * vb0; c2 += va2.y * vb1; c2 += va2.z * vb2; c2 += va2.w * vb3;
            c3 += va3.x * vb0; c3 += va3.y * vb1; c3 += va3.z * vb2; c3 += va3.w * vb3;
        }
#else
        ivec2 one = ivec2(1, 0);
        // Fetches through texture() at texel centres (NEAREST, one level: exact), as CONFIG 0.
        vec2 ia = 1.0 / vec2(textureSize(u_a, 0));
        vec2 ib = 1.0 / vec2(textureSize(u_b, 0));
#define SA(p) texture(u_a, (vec2(p) + 0.5) * ia)
#define SB(p) texture(u_b, (vec2(p) + 0.5) * ib)
        // Rows and columns past the matrix repeat its last one: their outputs are never read.
        int m0 = 4 * mb;
#if CONFIG == 3
        // Rows m0 .. m0+3 of k on one texel (m0 < u_m; rows past u_m read elements whose
        // outputs are never read).
        int ea = b * u_a_sb + m0;
        ivec2 da = step_of(u_a_sk, wa);
#else
        int ea0 = b * u_a_sb + min(m0, u_m - 1) * u_a_sm;
        int ea1 = b * u_a_sb + min(m0 + 1, u_m - 1) * u_a_sm;
        int ea2 = b * u_a_sb + min(m0 + 2, u_m - 1) * u_a_sm;
        int ea3 = b * u_a_sb + min(m0 + 3, u_m - 1) * u_a_sm;
#endif
#if CONFIG == 1 || CONFIG == 3
        int eb = b * u_b_sb + 4 * nb;
        ivec2 db = step_of(u_b_sk >> 2, wb);
#else
        int n0 = 4 * nb;
        int eb0 = b * u_b_sb + min(n0, u_n - 1) * u_b_sn;
        int eb1 = b * u_b_sb + min(n0 + 1, u_n - 1) * u_b_sn;
        int eb2 = b * u_b_sb + min(n0 + 2, u_n - 1) * u_b_sn;
        int eb3 = b * u_b_sb + min(n0 + 3, u_n - 1) * u_b_sn;
#endif
        int steps = u_kin >> 2;
        for (int r = 0; r < u_reps; ++r) {
#if CONFIG == 3
            // Stream j reads k = 4q + j: one texel per step, 4 k (u_a_sk texels) apart.
            ivec2 pa0 = texel_at(ea >> 2, wa), pa1 = texel_at((ea + u_a_sk) >> 2, wa);
            ivec2 pa2 = texel_at((ea + 2 * u_a_sk) >> 2, wa), pa3 = texel_at((ea + 3 * u_a_sk) >> 2, wa);
#else
            ivec2 pa0 = texel_at(ea0 >> 2, wa), pa1 = texel_at(ea1 >> 2, wa), pa2 = texel_at(ea2 >> 2, wa), pa3 = texel_at(ea3 >> 2, wa);
#endif
#if CONFIG == 1 || CONFIG == 3
            ivec2 pb = texel_at(eb >> 2, wb);
#else
            ivec2 pb0 = texel_at(eb0 >> 2, wb), pb1 = texel_at(eb1 >> 2, wb), pb2 = texel_at(eb2 >> 2, wb), pb3 = texel_at(eb3 >> 2, wb);
#endif
            for (int q = 0; q < steps; ++q) {
#if CONFIG == 3
                // Columns are k .. k+3 (4 rows each); the transpose's columns are the rows.
                mat4 at = transpose(mat4(SA(pa0), SA(pa1), SA(pa2), SA(pa3)));
                vec4 va0 = at[0], va1 = at[1], va2 = at[2], va3 = at[3];
                pa0 = advance(pa0, da, wa);
                pa1 = advance(pa1, da, wa);
                pa2 = advance(pa2, da, wa);
                pa3 = advance(pa3, da, wa);
#else
                vec4 va0 = SA(pa0), va1 = SA(pa1), va2 = SA(pa2), va3 = SA(pa3);
                pa0 = advance(pa0, one, wa);
                pa1 = advance(pa1, one, wa);
                pa2 = advance(pa2, one, wa);
                pa3 = advance(pa3, one, wa);
#endif
#if CONFIG == 1 || CONFIG == 3
                // Rows 4q .. 4q+3 of B, 4 columns each: c_r += sum_j A[r, 4q+j] * B[4q+j, :].
                vec4 vb0 = SB(pb);
                pb = advance(pb, db, wb);
                vec4 vb1 = SB(pb);
                pb = advance(pb, db, wb);
                vec4 vb2 = SB(pb);
                pb = advance(pb, db, wb);
                vec4 vb3 = SB(pb);
                pb = advance(pb, db, wb);
                mat4 bm = mat4(vb0, vb1, vb2, vb3);
                c0 += bm * va0;
                c1 += bm * va1;
                c2 += bm * va2;
                c3 += bm * va3;
#else
                // Columns 4nb .. 4nb+3 of B, 4 k each: c_r[j] = dot(A row r, B column j).
                mat4 bm = mat4(SB(pb0), SB(pb1), SB(pb2), SB(pb3));
                pb0 = advance(pb0, one, wb);
                pb1 = advance(pb1, one, wb);
                pb2 = advance(pb2, one, wb);
                pb3 = advance(pb3, one, wb);
                c0 += va0 * bm;
                c1 += va1 * bm;
                c2 += va2 * bm;
                c3 += va3 * bm;
#endif
            }
#if CONFIG == 3
            ea += u_a_sb;
#else
            ea0 += u_a_sb;
            ea1 += u_a_sb;
            ea2 += u_a_sb;
            ea3 += u_a_sb;
#endif
#if CONFIG == 1 || CONFIG == 3
            eb += u_b_sb;
#else
            eb0 += u_b_sb;
            eb1 += u_b_sb;
            eb2 += u_b_sb;
            eb3 += u_b_sb;
#endif
        }
#endif
    }
    o_color = PG_H4(c0);
    o_color1 = PG_H4(c1);
    o_color2 = PG_H4(c2);
    o_color3 = PG_H4(c3);
}
