// Entry point for programs that compute one element at a time: `float compute(float i)`.
void main() {
    float base = out_base();
    vec4 r = vec4(0.0);
    if (base < u_out_n) r.x = compute(base);
    if (base + 1.0 < u_out_n) r.y = compute(base + 1.0);
    if (base + 2.0 < u_out_n) r.z = compute(base + 2.0);
    if (base + 3.0 < u_out_n) r.w = compute(base + 3.0);
    gl_FragColor = pg_out(PG_H4(r));
}
