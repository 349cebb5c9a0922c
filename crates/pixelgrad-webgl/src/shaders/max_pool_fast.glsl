// Op::MaxPool, hand-written for one case (CONFIG 1; the general program is rendered from
// pixelgrad_core::kernel::windows): 2x2 windows at stride 2 without padding, where every tap
// is inside, fetched directly in the general program's order and with its rule (a later tap
// replaces the maximum only if greater), without its loops and bounds.
// Kept for a measured speed: Chromium per-draw probe, cnn, the first pooling 6.3 -> 3.1 ms,
// the second 2.0 -> 1.3 ms (commit bf0af0e).
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
