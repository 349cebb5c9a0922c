// Op::MaxPoolGrad as a gather (no two invocations write one address): x [N, C, H, W] and
// dy [N, C, OH, OW] -> dx [N, C, H, W]. Each pixel visits the windows covering it in ascending
// (oy, ox) order (only those: at most min(ceil(k / stride), OH) x min(ceil(k / stride), OW)),
// recomputes each one's maximum and tie count from x over its taps inside the image, and adds
// dy / ties where it equals the maximum: the CPU's sums, in its order. Grid (ceil(H*W / 256), C, images) as in
// col2im.wgsl. params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW, f32 1/OW,
// f32 1/W, f32 1/stride_h, f32 1/stride_w].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// The windows covering coordinate t (already shifted by the padding) on one axis: output
// positions lo..=hi, clipped to the output size o, so at most min(ceil(k / s), o) of them.
fn covering(t: u32, k: u32, s: u32, inv_s: f32, o: u32) -> vec2<u32> {
    var lo = 0u;
    if (t + 1u > k) {
        lo = ceil_div_small(t + 1u - k, s, inv_s);
    }
    let hi = min(div_small(t, s, inv_s), o - 1u);
    return vec2<u32>(lo, hi);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let images = pu(0u);
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let oh = pu(10u);
    let ow = pu(11u);
    let q = wid.x * 256u + lid;
    if (q >= h * w) {
        return;
    }
    let y = div_small(q, w, pf(13u));
    let xx = q - y * w;
    let ry = covering(y + pu(8u), pu(4u), pu(6u), pf(14u), oh);
    let rx = covering(xx + pu(9u), pu(5u), pu(7u), pf(15u), ow);
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            let plane = n * ch + c;
            let v = x[plane * h * w + q];
            var sum = 0.0;
            for (var oy = ry.x; oy <= ry.y; oy++) {
                for (var ox = rx.x; ox <= rx.y; ox++) {
                    let m = window_max(plane * h * w, oy, ox);
                    if (v == m.x) {
                        sum += dy[(plane * oh + oy) * ow + ox] / m.y;
                    }
                }
            }
            out[plane * h * w + q] = sum;
        }
    }
}
