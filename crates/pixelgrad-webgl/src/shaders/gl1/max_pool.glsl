// Op::MaxPool (as shaders/max_pool.glsl; window_max.glsl comes first).
float compute(float i) {
    vec2 a = pg_divmod(i, u_oh * u_ow);
    vec2 p = pg_divmod(a.y, u_ow);
    return window_max(a.x * u_h * u_w, p.x, p.y).x;
}
