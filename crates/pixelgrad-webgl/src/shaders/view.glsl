// Permute, Expand, Slice and Pad in one program: output coordinate c (shape u_shape, padded to
// MAX_RANK) reads input element u_off + sum(c[d] * u_st[d]) when u_lo[d] <= c[d] < u_hi[d] on
// every axis, else 0. Permute permutes strides, Expand zeroes them, Slice shifts u_off, Pad
// uses the bounds (and a negative offset).
uniform highp sampler2D u_x;
uniform int u_shape[MAX_RANK];
uniform int u_st[MAX_RANK];
uniform int u_lo[MAX_RANK];
uniform int u_hi[MAX_RANK];
uniform int u_off;
uniform int u_rank;  // axes in use (the leading MAX_RANK - u_rank are padding)

float compute(int i) {
    int src = u_off, rest = i;
    bool inside = true;
    for (int d = MAX_RANK - 1; d >= MAX_RANK - u_rank; --d) {
        int c = rest % u_shape[d];
        rest /= u_shape[d];
        inside = inside && c >= u_lo[d] && c < u_hi[d];
        src += c * u_st[d];
    }
    return inside ? fetch(u_x, src) : 0.0;
}
