// Permute, Expand, Slice and Pad in one program: output coordinate c (shape u_shape, padded to
// MAX_RANK) reads input element u_off + sum(c[d] * u_st[d]) when u_lo[d] <= c[d] < u_hi[d] on
// every axis, else 0. Permute permutes strides, Expand zeroes them, Slice shifts u_off, Pad
// uses the bounds (and a negative offset).
//
// CONFIG 1: views that coalesce to rows (`ops/layout.rs` merges axes that are contiguous in
// both tensors and unbounded): output element (r, c) of rows of u_n reads u_off + r*u_st0 +
// c*u_st1 inside the bounds, else 0 (a slice or pad of the last axis, a broadcast row, a 2-D
// transpose). GLSL ES 3.00 only (it computes a texel at a time, PG_COMPUTE4); the webgl1 mode
// draws every view with CONFIG 0. A texel at a time, dividing once: the general program's per-axis loop over
// uniform arrays costs SwiftShader ~5x an elementwise pass of the same size.
SAMPLER(u_x, u_x_size);
uniform INDEX u_off;
#if CONFIG == 1
#ifdef PG_ES300
uniform int u_n;
uniform int u_st0;
uniform int u_st1;
uniform int u_lo0;
uniform int u_hi0;
uniform int u_lo1;
uniform int u_hi1;

float at(int r, int c) {
    bool inside = r >= u_lo0 && r < u_hi0 && c >= u_lo1 && c < u_hi1;
    return inside ? fetch(u_x, u_off + r * u_st0 + c * u_st1) : 0.0;
}

#define PG_COMPUTE4

// Element i + j, one step along the row from (r, c); a new row divides again (rows shorter
// than a texel may be crossed more than once).
#define VIEW_NEXT(j) if (++c >= u_n) { r = (i + j) / u_n; c = i + j - r * u_n; }

vec4 compute4(int i) {
    int r = i / u_n;
    int c = i - r * u_n;
    vec4 v;
    v.x = at(r, c);
    VIEW_NEXT(1)
    v.y = at(r, c);
    VIEW_NEXT(2)
    v.z = at(r, c);
    VIEW_NEXT(3)
    v.w = at(r, c);
    return v;
}
#endif
#else
uniform INDEX u_shape[MAX_RANK];
uniform INDEX u_st[MAX_RANK];
uniform INDEX u_lo[MAX_RANK];
uniform INDEX u_hi[MAX_RANK];
uniform INDEX u_rank;  // axes in use (the leading MAX_RANK - u_rank are padding)

float compute(INDEX i) {
    INDEX src = u_off, rest = i;
    bool inside = true;
    PG_FOR_DOWN(d, MAX_RANK - 1, IX(MAX_RANK) - u_rank) {
        INDEX c = PG_MOD(rest, u_shape[d]);
        rest = PG_DIV(rest, u_shape[d]);
        inside = inside && c >= u_lo[d] && c < u_hi[d];
        src += c * u_st[d];
    }
    return inside ? FETCH(u_x, u_x_size, src) : 0.0;
}
#endif
