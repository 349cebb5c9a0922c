// Op::Im2Col, hand-written a texel at a time (CONFIG 1; the general program, one element per
// call, is rendered from pixelgrad_core::kernel::columns and serves WebGL1): the position of a
// texel's first element is decomposed once, the next three step along the row (carrying into
// the next row, window tap and image plane) without division.
// Kept for a measured speed: 2.3x on llvmpipe for the cnn's second convolution against one
// element per call (commit a5da771).
#define PG_COMPUTE4

// Column entry (plane, ki, kj, oy, ox): 0 in the padding and past the last element `i`.
float im2col_at(int i, int plane, int ki, int kj, int oy, int ox) {
    int y = oy * u_sh + ki - u_ph;
    int x = ox * u_sw + kj - u_pw;
    if (i >= u_out_n || y < 0 || y >= u_h || x < 0 || x >= u_w) return 0.0;
    return PG_H(fetch(u_x, (plane * u_h + y) * u_w + x));
}

// The position of the next element of the output.
void im2col_next(inout int plane, inout int ki, inout int kj, inout int oy, inout int ox) {
    if (++ox < u_ow) return;
    ox = 0;
    if (++oy < u_oh) return;
    oy = 0;
    if (++kj < u_kw) return;
    kj = 0;
    if (++ki < u_kh) return;
    ki = 0;
    ++plane;
}

vec4 compute4(int i) {
    int ohw = u_oh * u_ow;
    int kk = u_kh * u_kw;
    int t = i / ohw;
    int p = i - t * ohw;
    int plane = t / kk;
    int r = t - plane * kk;
    int ki = r / u_kw;
    int kj = r - ki * u_kw;
    int oy = p / u_ow;
    int ox = p - oy * u_ow;
    vec4 v;
    v.x = im2col_at(i, plane, ki, kj, oy, ox);
    im2col_next(plane, ki, kj, oy, ox);
    v.y = im2col_at(i + 1, plane, ki, kj, oy, ox);
    im2col_next(plane, ki, kj, oy, ox);
    v.z = im2col_at(i + 2, plane, ki, kj, oy, ox);
    im2col_next(plane, ki, kj, oy, ox);
    v.w = im2col_at(i + 3, plane, ki, kj, oy, ox);
    return v;
}
