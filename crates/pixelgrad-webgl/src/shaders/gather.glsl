// Op::Gather: idx viewed as [outer, J, inner], x as [outer, A, inner];
// out[o, j, r] = x[o, idx[o, j, r], r]. Out-of-range indices read 0 (a shader cannot fail).
uniform highp sampler2D u_x;
uniform highp sampler2D u_idx;
uniform int u_inner;
uniform int u_j;
uniform int u_a;

float compute(int i) {
    int r = i % u_inner;
    int o = i / (u_inner * u_j);
    int k = int(fetch(u_idx, i));
    if (k < 0 || k >= u_a) return 0.0;
    return fetch(u_x, (o * u_a + k) * u_inner + r);
}
