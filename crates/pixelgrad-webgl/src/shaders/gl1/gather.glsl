// Op::Gather (as shaders/gather.glsl): out[o, j, r] = x[o, idx[o, j, r], r]; out-of-range
// indices read 0 (the index check reports them).
uniform highp sampler2D u_x;
uniform vec2 u_x_size;
uniform highp sampler2D u_idx;
uniform vec2 u_idx_size;
uniform float u_inner;
uniform float u_j;
uniform float u_a;

float compute(float i) {
    float r = pg_divmod(i, u_inner).y;
    float o = pg_divmod(i, u_inner * u_j).x;
    float k = floor(fetch(u_idx, u_idx_size, i));
    if (k < 0.0 || k >= u_a) return 0.0;
    return fetch(u_x, u_x_size, (o * u_a + k) * u_inner + r);
}
