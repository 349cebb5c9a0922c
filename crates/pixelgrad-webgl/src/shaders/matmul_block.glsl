// Matmul on 4x4 output blocks, for large products: one fragment computes rows 4mb .. 4mb+3 by
// columns 4nb .. 4nb+3 of batch b and writes row 4mb+r of the block to render target r (4
// targets, texel t = (b*u_mb + mb)*u_nb + nb); matmul_unblock.glsl then assembles the flat
// output. A and B come from matmul_block_pack.glsl: the 4 texels of A's rows and the 4 of B's
// k rows for one step of 4 k are neighbours in one texture row (the packed textures' widths
// are multiples of 4), so a step is 8 fetches at one coordinate plus 0..3 and 64
// multiply-adds, against 5 fetches for 16 in matmul.glsl: 2.5x fewer fetches per product,
// which is what a software rasteriser (SwiftShader, llvmpipe) spends its time on.
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
        ivec2 x1 = ivec2(1, 0), x2 = ivec2(2, 0), x3 = ivec2(3, 0);
        for (int q = 0; q < u_kq; ++q) {
            vec4 b0 = texelFetch(u_b, pb, 0);
            vec4 b1 = texelFetch(u_b, pb + x1, 0);
            vec4 b2 = texelFetch(u_b, pb + x2, 0);
            vec4 b3 = texelFetch(u_b, pb + x3, 0);
            vec4 a0 = texelFetch(u_a, pa, 0);
            vec4 a1 = texelFetch(u_a, pa + x1, 0);
            vec4 a2 = texelFetch(u_a, pa + x2, 0);
            vec4 a3 = texelFetch(u_a, pa + x3, 0);
            // Widths are multiples of 4: a group of 4 never straddles a texture row.
            pa.x += 4;
            pa = pa.x >= wa ? ivec2(0, pa.y + 1) : pa;
            pb.x += 4;
            pb = pb.x >= wb ? ivec2(0, pb.y + 1) : pb;
            c0 += a0.x * b0; c0 += a0.y * b1; c0 += a0.z * b2; c0 += a0.w * b3;
            c1 += a1.x * b0; c1 += a1.y * b1; c1 += a1.z * b2; c1 += a1.w * b3;
            c2 += a2.x * b0; c2 += a2.y * b1; c2 += a2.z * b2; c2 += a2.w * b3;
            c3 += a3.x * b0; c3 += a3.y * b1; c3 += a3.z * b2; c3 += a3.w * b3;
        }
    }
    o_color = c0;
    o_color1 = c1;
    o_color2 = c2;
    o_color3 = c3;
}
