// Matmul on 4x4 output blocks, for large products: one fragment computes rows 4mb .. 4mb+3 by
// columns 4nb .. 4nb+3 of batch b and writes row 4mb+r of the block to render target r (4
// targets, texel t = (b*u_mb + mb)*u_nb + nb); matmul_unblock.glsl then assembles the flat
// output. A and B come from matmul_block_pack.glsl: the 4 texels of A's rows and the 4 of B's
// k rows for one step of 4 k are neighbours in one texture row (the packed textures' widths
// are multiples of 4), so a step is 8 fetches at one coordinate plus 0..3 and 64
// multiply-adds, against 5 fetches for 16 in matmul.glsl: 2.5x fewer fetches per product,
// which is what a software rasteriser (SwiftShader, llvmpipe) spends most of its time on.
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

ivec2 texel_at(int t, int w) {
    int y = t / w;
    return ivec2(t - y * w, y);
}

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
    }
    o_color = c0;
    o_color1 = c1;
    o_color2 = c2;
    o_color3 = c3;
}
