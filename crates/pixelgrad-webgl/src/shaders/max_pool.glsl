// Op::MaxPool: x [N, C, H, W] -> [N, C, OH, OW], one window scan per output (window_max.glsl
// comes first).
float compute(int i) {
    int ohw = u_oh * u_ow;
    int p = i % ohw;
    return window_max((i / ohw) * u_h * u_w, p / u_ow, p % u_ow).x;
}
