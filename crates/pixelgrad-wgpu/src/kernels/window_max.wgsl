// Shared by max_pool.wgsl and max_pool_grad.wgsl: the maximum of window (oy, ox) of the image
// plane starting at `base` of `x`, and how many taps equal it (as f32). Taps in (i, j) order,
// only those inside the image (`tap_range`: at most H x W of them however large the window;
// the padding is smaller than the window, so some tap is inside); a later tap replaces the
// maximum only if greater.
fn window_max(base: u32, oy: u32, ox: u32) -> vec2<f32> {
    let w = pu(3u);
    let ys = oy * pu(6u);
    let xs = ox * pu(7u);
    let rows = tap_range(ys, pu(4u), pu(8u), pu(2u));
    let cols = tap_range(xs, pu(5u), pu(9u), w);
    // Input column of tap cols.x (start + lo >= pad when the range is not empty).
    let x0 = xs + cols.x - pu(9u);
    var m = 0.0;
    var ties = 0.0;
    for (var ki = rows.x; ki < rows.y; ki++) {
        let row = base + (ys + ki - pu(8u)) * w + x0;
        for (var t = 0u; t < cols.y - cols.x; t++) {
            let v = x[row + t];
            if (ties == 0.0 || v > m) {
                m = v;
                ties = 1.0;
            } else if (v == m) {
                ties += 1.0;
            }
        }
    }
    return vec2<f32>(m, max(ties, 1.0));
}
