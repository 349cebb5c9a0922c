// Permute, Expand, Slice and Pad in one program (as shaders/view.glsl): output coordinate c
// reads input element u_off + sum(c[d] * u_st[d]) when u_lo[d] <= c[d] < u_hi[d] on every
// axis, else 0.
uniform highp sampler2D u_x;
uniform vec2 u_x_size;
uniform float u_shape[MAX_RANK];
uniform float u_st[MAX_RANK];
uniform float u_lo[MAX_RANK];
uniform float u_hi[MAX_RANK];
uniform float u_off;
uniform float u_rank;

float compute(float i) {
    float src = u_off;
    float rest = i;
    bool inside = true;
    for (int d = MAX_RANK - 1; d >= 0; --d) {
        if (float(d) < float(MAX_RANK) - u_rank) break;
        vec2 qr = pg_divmod(rest, u_shape[d]);
        rest = qr.x;
        inside = inside && qr.y >= u_lo[d] && qr.y < u_hi[d];
        src += qr.y * u_st[d];
    }
    return inside ? fetch(u_x, u_x_size, src) : 0.0;
}
