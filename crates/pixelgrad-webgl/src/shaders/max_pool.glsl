// Op::MaxPool: x [N, C, H, W] -> [N, C, OH, OW], one window scan per output (window_max.glsl
// comes first).
#if CONFIG == 1
// 2x2 windows at stride 2 without padding (every tap inside): the four taps fetched directly,
// in window_max's order and with its rule (a later tap replaces the maximum only if greater),
// without its loops and bounds checks.
float compute(int i) {
    int ohw = u_oh * u_ow;
    int plane = i / ohw;
    int p = i - plane * ohw;
    int oy = p / u_ow;
    int e = (plane * u_h + 2 * oy) * u_w + 2 * (p - oy * u_ow);
    float m = fetch(u_x, e);
    float v = fetch(u_x, e + 1);
    m = v > m ? v : m;
    v = fetch(u_x, e + u_w);
    m = v > m ? v : m;
    v = fetch(u_x, e + u_w + 1);
    return v > m ? v : m;
}
#else
float compute(int i) {
    int ohw = u_oh * u_ow;
    int p = i % ohw;
    return window_max((i / ohw) * u_h * u_w, p / u_ow, p % u_ow).x;
}
#endif
