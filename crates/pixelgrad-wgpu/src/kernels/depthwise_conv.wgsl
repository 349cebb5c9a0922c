// Op::DepthwiseConv: x [N, C, H, W] and k [C, 1, kh, kw] -> [N, C, OH, OW], one filter per
// channel. Grid (ceil(P / 256), C, images) as in im2col.wgsl (the last two folded into loops
// beyond the grid limit): each invocation owns one output position p of one channel and sums
// its kh*kw taps in (i, j) order, skipping taps in the padding, so no columns are written.
// params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW, f32 1/OW].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let images = pu(0u);
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let kh = pu(4u);
    let kw = pu(5u);
    let ow = pu(11u);
    let positions = pu(10u) * ow;
    let kk = kh * kw;
    let p = wid.x * 256u + lid;
    if (p >= positions) {
        return;
    }
    let oy = div_small(p, ow, pf(12u));
    let ox = p - oy * ow;
    // Signed, since padding moves the window before the image.
    let y0 = i32(oy * pu(6u)) - i32(pu(8u));
    let x0 = i32(ox * pu(7u)) - i32(pu(9u));
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            let src = (n * ch + c) * h;
            var acc = 0.0;
            for (var ki = 0u; ki < kh; ki++) {
                let y = y0 + i32(ki);
                if (y < 0 || y >= i32(h)) {
                    continue;
                }
                let row = (src + u32(y)) * w;
                let taps = c * kk + ki * kw;
                for (var kj = 0u; kj < kw; kj++) {
                    let xx = x0 + i32(kj);
                    if (xx >= 0 && xx < i32(w)) {
                        acc += x[row + u32(xx)] * k[taps + kj];
                    }
                }
            }
            out[(n * ch + c) * positions + p] = acc;
        }
    }
}
