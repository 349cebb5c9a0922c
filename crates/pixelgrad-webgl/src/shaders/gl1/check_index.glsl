// Validation flag for index tensors (gather, scatter_add): 1 where an index is NaN, not a
// whole number or outside 0..u_bound, else 0.
uniform highp sampler2D u_idx;
uniform vec2 u_idx_size;
uniform float u_bound;

float compute(float i) {
    float v = fetch(u_idx, u_idx_size, i);
    bool bad = pg_isnan(v) || floor(v) != v || v < 0.0 || v >= u_bound;
    return bad ? 1.0 : 0.0;
}
