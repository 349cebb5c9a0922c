// Op::MatMulNBits (WebGL2): a [M, K] (or [M, N] with CONFIG bit 1) times block-quantised
// weights read from the packed bytes as uploaded. q is u8 storage (RGBA8UI, one byte per
// element, 4 per texel as every tensor) read with integer fetches; a value is the byte (8-bit,
// CONFIG bit 0 clear) or a nibble of it (4-bit, bit 0 set: value j of a block in the low
// nibble of byte j / 2 when j is even, the high nibble when odd). The weight
// W[k, n] = (q(n, k) - zeros[n, k / block]) * scales[n, k / block] is never stored: each value
// is dequantised where it is read.
//
// CONFIG bit 1 clear: out[m, n] = sum_k a[m, k] W[k, n]; per block the whole-number
// differences q - zero (exact in f32) are summed against a, then scaled once. Bit 1 set (the
// gradient form): out[m, k] = sum_n a[m, n] W[k, n]. Each fragment writes 4 consecutive
// output elements (they may span rows), each its own loop. CONFIG bit 2 (plain form only):
// the aligned fast path below.
// Kept for a measured speed: against the one-definition alternative (widen the bytes,
// subtract the zeros and scale by elementwise ops, then the f32 product), llvmpipe, WebGL2:
// 27.8x at [1,1024]x[1024,1024] 8-bit (a decoder's token step) with the hand-written f32
// product, 25.3x with the rendered one; at M = 16 the alternative with the hand-written
// product measured alike (0.92), 9.2x with the rendered one. The device also keeps only the
// packed bytes (no f32 weight) (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
uniform highp sampler2D u_a;
uniform highp usampler2D u_q;
uniform highp sampler2D u_s;
uniform highp sampler2D u_z;
// Weight rows (N), values per row (k), values per block, blocks per row, bytes per row.
uniform int u_n;
uniform int u_k;
uniform int u_block;
uniform int u_kb;
uniform int u_row;

// Byte i of the packed weights.
uint q_byte(int i) {
    int t = i >> 2;
    int w = textureSize(u_q, 0).x;
    uvec4 v = texelFetch(u_q, ivec2(t % w, t / w), 0);
    int c = i & 3;
    return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w));
}

// Value j of block b of weight row n, as a whole number.
float q_value(int n, int b, int j) {
#if (CONFIG & 1) != 0
    uint byte = q_byte(n * u_row + b * (u_block >> 1) + (j >> 1));
    return float((j & 1) == 0 ? (byte & 15u) : (byte >> 4));
#else
    return float(q_byte(n * u_row + b * u_block + j));
#endif
}

#if (CONFIG & 6) == 4
// The aligned form (CONFIG bit 2: K a multiple of 4, the block of 8): every block's bytes
// start on a texel of q and its values on a texel of a, so a block is read a texel at a time
// (4 values of a; 4 bytes of q, 8 values at 4 bits) with no division per step. Only a row's
// last block can be cut short by K (to a multiple of 4 values); the rest of its bytes are
// left unread.
float element(int m, int n) {
    int wa = textureSize(u_a, 0).x;
    int wq = textureSize(u_q, 0).x;
    ivec2 one = ivec2(1, 0);
    ivec2 pa = texel_at((m * u_k) >> 2, wa);
    ivec2 pq = texel_at((n * u_row) >> 2, wq);
    float acc = 0.0;
    for (int b = 0; b < u_kb; ++b) {
        int p = n * u_kb + b;
        vec4 z = vec4(fetch(u_z, p));
        int len = min(u_block, u_k - b * u_block);
        float part = 0.0;
#if (CONFIG & 1) != 0
        // 4-bit: a texel of q holds 8 values, the even ones in the low nibbles.
        for (int j = 0; j < len; j += 8) {
            uvec4 v = texelFetch(u_q, pq, 0);
            pq = advance(pq, one, wq);
            part += dot(texelFetch(u_a, pa, 0), vec4(v.x & 15u, v.x >> 4, v.y & 15u, v.y >> 4) - z);
            pa = advance(pa, one, wa);
            if (j + 4 < len) {
                part += dot(texelFetch(u_a, pa, 0), vec4(v.z & 15u, v.z >> 4, v.w & 15u, v.w >> 4) - z);
                pa = advance(pa, one, wa);
            }
        }
#else
        for (int j = 0; j < len; j += 4) {
            part += dot(texelFetch(u_a, pa, 0), vec4(texelFetch(u_q, pq, 0)) - z);
            pq = advance(pq, one, wq);
            pa = advance(pa, one, wa);
        }
#endif
        acc += part * fetch(u_s, p);
    }
    return acc;
}
#elif (CONFIG & 2) == 0
// out[m, n]: block by block, sum a[m, k] (q - zero), then times the block's scale.
float element(int m, int n) {
    int ao = m * u_k;
    float acc = 0.0;
    for (int b = 0; b < u_kb; ++b) {
        int p = n * u_kb + b;
        float z = fetch(u_z, p);
        int k0 = b * u_block;
        int len = min(u_block, u_k - k0);
        float part = 0.0;
        for (int j = 0; j < len; ++j) {
            part += fetch(u_a, ao + k0 + j) * (q_value(n, b, j) - z);
        }
        acc += part * fetch(u_s, p);
    }
    return acc;
}
#else
// out[m, k]: sum over the weight rows n of a[m, n] W[k, n].
float element(int m, int k) {
    int b = k / u_block;
    int j = k - b * u_block;
    int ao = m * u_n;
    float acc = 0.0;
    for (int n = 0; n < u_n; ++n) {
        int p = n * u_kb + b;
        acc += fetch(u_a, ao + n) * ((q_value(n, b, j) - fetch(u_z, p)) * fetch(u_s, p));
    }
    return acc;
}
#endif

// Element i of the flat output, rows `cols` long (0 past the end).
float at(int i, int cols) {
    if (i >= u_out_n) return 0.0;
    int m = i / cols;
    return element(m, i - m * cols);
}

void main() {
    int base = out_base();
#if (CONFIG & 2) == 0
    int cols = u_n;
#else
    int cols = u_k;
#endif
    o_color = PG_H4(vec4(at(base, cols), at(base + 1, cols), at(base + 2, cols), at(base + 3, cols)));
}
