// Adjoint of im2col, written as a gather so no two threads write one address (WGSL has no
// float atomics): each image pixel sums the column entries of every window covering it, in
// ascending (i, j) order. [N, C*kh*kw, OH*OW] -> [N, C, H, W]. Grid (ceil(H*W / 256), C,
// images), the last two folded into loops when larger than the grid allows. The windows
// covering row y are those with i = (y + pad_h) mod stride_h + a * stride_h, at window row
// oy = (y + pad_h) div stride_h - a, so the loops step through them directly; the divisions
// are in f32 (`div_small`: lavapipe runs u32 division lane by lane).
// params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW, f32 1/OW, f32 1/W,
// f32 1/stride_h, f32 1/stride_w].
@group(0) @binding(1) var<storage, read> col: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let images = pu(0u);
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let kh = pu(4u);
    let kw = pu(5u);
    let sh = pu(6u);
    let sw = pu(7u);
    let oh = pu(10u);
    let ow = pu(11u);
    let q = wid.x * 256u + lid;
    if (q >= h * w) {
        return;
    }
    let y = div_small(q, w, pf(13u));
    let xx = q - y * w;
    let ty = y + pu(8u);
    let oy_top = div_small(ty, sh, pf(14u));
    let ki0 = ty - oy_top * sh;
    let tx = xx + pu(9u);
    let ox_top = div_small(tx, sw, pf(15u));
    let kj0 = tx - ox_top * sw;
    let kk = kh * kw;
    let positions = oh * ow;
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            let row_base = (n * ch + c) * kk;
            var sum = 0.0;
            var oy = i32(oy_top);
            for (var ki = ki0; ki < kh && oy >= 0; ki += sh) {
                if (u32(oy) < oh) {
                    var ox = i32(ox_top);
                    for (var kj = kj0; kj < kw && ox >= 0; kj += sw) {
                        if (u32(ox) < ow) {
                            sum += col[(row_base + ki * kw + kj) * positions + u32(oy) * ow + u32(ox)];
                        }
                        ox -= 1;
                    }
                }
                oy -= 1;
            }
            out[((n * ch + c) * h + y) * w + xx] = sum;
        }
    }
}
