// Kept hand-written for a measured speed: the program rendered from its one definition
// (pixelgrad_core::kernel::columns: one invocation per element, every division through
// `pg_idiv`) took 9-10 ms per launch on lavapipe for examples/cnn_ops' "col2im conv2
// [32,72,121]", 4x relu's time or more in the same run, where this kernel takes 1.3x
// (bench/notes/2026-12-07-im2col-col2im-from-one-definition.md).
// Adjoint of im2col, written as a gather so no two threads write one address (WGSL has no
// float atomics): each image pixel sums the column entries of every window covering it, in
// ascending (i, j) order. [N, C*kh*kw, OH*OW] -> [N, C, H, W]. Grid (ceil(H*W / 256), C,
// images), the last two folded into loops when larger than the grid allows. The windows
// covering row y (t = y + pad_h) are those at rows oy with oy * stride_h <= t < oy * stride_h
// + kh and oy < OH: oy from min(t div stride_h, OH - 1) down to ceil((t + 1 - kh) / stride_h)
// (at most min(ceil(kh / stride_h), OH) of them, however large the window), at window row
// i = t - oy * stride_h, ascending; the divisions are in f32 (`div_small`: lavapipe runs u32
// division lane by lane).
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
    let tx = xx + pu(9u);
    // Window rows oy_lo..=oy_hi (descending, so i ascends) and columns ox_lo..=ox_hi.
    let oy_hi = i32(min(div_small(ty, sh, pf(14u)), oh - 1u));
    let ox_hi = i32(min(div_small(tx, sw, pf(15u)), ow - 1u));
    let oy_lo = i32(select(0u, ceil_div_small(ty + 1u - kh, sh, pf(14u)), ty + 1u > kh));
    let ox_lo = i32(select(0u, ceil_div_small(tx + 1u - kw, sw, pf(15u)), tx + 1u > kw));
    let kk = kh * kw;
    let positions = oh * ow;
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            let row_base = (n * ch + c) * kk;
            var sum = 0.0;
            for (var oy = oy_hi; oy >= oy_lo; oy--) {
                let ki = ty - u32(oy) * sh;
                for (var ox = ox_hi; ox >= ox_lo; ox--) {
                    let kj = tx - u32(ox) * sw;
                    sum += col[(row_base + ki * kw + kj) * positions + u32(oy) * ow + u32(ox)];
                }
            }
            out[((n * ch + c) * h + y) * w + xx] = sum;
        }
    }
}
