// [N, C, H, W] -> [N, C*kh*kw, OH*OW]; row c*kh*kw + i*kw + j, column oy*OW + ox; padded
// positions read 0. One thread per output element.
// params [n_out, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let kh = pu(4u);
    let kw = pu(5u);
    let ow = pu(11u);
    let positions = pu(10u) * ow;
    let kk = kh * kw;
    let p = i % positions;
    let row = (i / positions) % (ch * kk);
    let n = i / (positions * ch * kk);
    let c = row / kk;
    let ki = (row % kk) / kw;
    let kj = row % kw;
    // Signed, since padding moves the window before the image.
    let y = i32((p / ow) * pu(6u) + ki) - i32(pu(8u));
    let xx = i32((p % ow) * pu(7u) + kj) - i32(pu(9u));
    var v = 0.0;
    if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) {
        v = x[((n * ch + c) * h + u32(y)) * w + u32(xx)];
    }
    out[i] = v;
}
