// Validation flag for index tensors (gather, scatter_add): 1 where an index is NaN, not a
// whole number or outside 0..u_bound, else 0. A max-reduction turns it into one flag.
uniform highp sampler2D u_idx;
uniform int u_bound;

float compute(int i) {
    float v = fetch(u_idx, i);
    bool bad = isnan(v) || !(v == v) || floor(v) != v || v < 0.0 || v >= float(u_bound);
    return bad ? 1.0 : 0.0;
}
