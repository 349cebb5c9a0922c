// Op::ScatterAdd as a gather (no atomics or blending needed): output [outer, S, inner] element
// (o, s, r) loops over the J source positions of its column and sums those whose index is s.
uniform highp sampler2D u_src;
uniform highp sampler2D u_idx;
uniform int u_inner;
uniform int u_j;
uniform int u_s;

float compute(int i) {
    int r = i % u_inner;
    int s = (i / u_inner) % u_s;
    int o = i / (u_inner * u_s);
    float acc = 0.0;
    for (int j = 0; j < u_j; ++j) {
        int p = (o * u_j + j) * u_inner + r;
        if (int(fetch(u_idx, p)) == s) acc += fetch(u_src, p);
    }
    return acc;
}
