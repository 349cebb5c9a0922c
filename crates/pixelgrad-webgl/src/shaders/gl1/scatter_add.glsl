// Op::ScatterAdd as a gather (as shaders/scatter_add.glsl). The loop over the J source
// positions has the constant bound MAX_LOOP and breaks at u_j.
uniform highp sampler2D u_src;
uniform vec2 u_src_size;
uniform highp sampler2D u_idx;
uniform vec2 u_idx_size;
uniform float u_inner;
uniform float u_j;
uniform float u_s;

float compute(float i) {
    vec2 p = pg_divmod(i, u_inner);
    vec2 q = pg_divmod(p.x, u_s);
    float r = p.y;
    float s = q.y;
    float o = q.x;
    float acc = 0.0;
    for (float j = 0.0; j < MAX_LOOP; j += 1.0) {
        if (j >= u_j) break;
        float at = (o * u_j + j) * u_inner + r;
        if (floor(fetch(u_idx, u_idx_size, at)) == s) acc += fetch(u_src, u_src_size, at);
    }
    return acc;
}
