// Validation flag for index tensors (gather, scatter_add): 1 where an index is NaN, not a
// whole number or outside 0..u_bound, else 0. A max-reduction turns it into one flag.
SAMPLER(u_idx, u_idx_size);
uniform INDEX u_bound;

float compute(INDEX i) {
    float v = FETCH(u_idx, u_idx_size, i);
    bool bad = PG_ISNAN(v) || floor(v) != v || v < 0.0 || v >= float(u_bound);
    return bad ? 1.0 : 0.0;
}
