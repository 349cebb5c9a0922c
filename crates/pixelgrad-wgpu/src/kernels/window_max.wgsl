// Shared by max_pool.wgsl and max_pool_grad.wgsl: the maximum of window (oy, ox) of the image
// plane starting at `base` of `x`, and how many taps equal it (as f32). Taps in (i, j) order,
// the padding skipped (it is smaller than the window, so some tap is inside); a later tap
// replaces the maximum only if greater.
fn window_max(base: u32, oy: u32, ox: u32) -> vec2<f32> {
    let h = i32(pu(2u));
    let w = i32(pu(3u));
    let kh = i32(pu(4u));
    let kw = i32(pu(5u));
    let y0 = i32(oy * pu(6u)) - i32(pu(8u));
    let x0 = i32(ox * pu(7u)) - i32(pu(9u));
    var m = 0.0;
    var ties = 0.0;
    for (var ki = 0; ki < kh; ki++) {
        let y = y0 + ki;
        if (y < 0 || y >= h) {
            continue;
        }
        let row = base + u32(y * w);
        for (var kj = 0; kj < kw; kj++) {
            let xx = x0 + kj;
            if (xx < 0 || xx >= w) {
                continue;
            }
            let v = x[row + u32(xx)];
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
