// Entry point for programs that compute one element at a time (`float compute(INDEX i)`) or,
// defining PG_COMPUTE4 (GLSL ES 3.00 programs only), a texel at a time.
void main() {
    INDEX base = out_base();
    vec4 r = vec4(0.0);
#ifdef PG_COMPUTE4
    // Bodies that compute a whole texel at once (`vec4 compute4(int base)`: elementwise
    // programs reading a texel of each input, im2col, ...); lanes past the end are 0.
    r = compute4(base);
    if (base + 3 >= u_out_n) r = mix(vec4(0.0), r, lessThan(ivec4(base) + ivec4(0, 1, 2, 3), ivec4(u_out_n)));
#else
    if (base + IX(0) < u_out_n) r.x = compute(base + IX(0));
    if (base + IX(1) < u_out_n) r.y = compute(base + IX(1));
    if (base + IX(2) < u_out_n) r.z = compute(base + IX(2));
    if (base + IX(3) < u_out_n) r.w = compute(base + IX(3));
#endif
#ifdef PG_EPILOGUE
    // A pending computation reading this result (dialect::REDUCE_EPI), as a second output.
    o_color1 = PG_H4(pg_epilogue(base, r));
#endif
    PG_WRITE(PG_H4(r));
}
