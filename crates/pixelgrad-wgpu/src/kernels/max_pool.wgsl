// Op::MaxPool: x [N, C, H, W] -> [N, C, OH, OW]. Grid (ceil(OH*OW / 256), C, images) as in
// depthwise_conv.wgsl (the last two folded into loops beyond the grid limit): each invocation
// owns one output position of one channel and scans its window's taps inside the image in
// (i, j) order (window_max.wgsl: never the padding, however large the window); a tap replaces
// the running maximum only if greater (NaN never does).
// params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW, f32 1/OW].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let images = pu(0u);
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let ow = pu(11u);
    let positions = pu(10u) * ow;
    let p = wid.x * 256u + lid;
    if (p >= positions) {
        return;
    }
    let oy = div_small(p, ow, pf(12u));
    let ox = p - oy * ow;
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            out[(n * ch + c) * positions + p] = window_max((n * ch + c) * h * w, oy, ox).x;
        }
    }
}
