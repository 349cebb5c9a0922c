// Adjoint of im2col, written as a gather so no two threads write one address (WGSL has no
// float atomics): each image pixel sums the column entries of every window covering it.
// [N, C*kh*kw, OH*OW] -> [N, C, H, W].
// params [n_out, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW].
@group(0) @binding(1) var<storage, read> col: array<f32>;
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
    let sh = pu(6u);
    let sw = pu(7u);
    let oh = pu(10u);
    let ow = pu(11u);
    let kk = kh * kw;
    let xx = i % w;
    let y = (i / w) % h;
    let nc = i / (w * h);
    let c = nc % ch;
    let n = nc / ch;
    let row_base = (n * ch + c) * kk;
    var sum = 0.0;
    for (var ki = 0u; ki < kh; ki++) {
        // Window row oy covers y when oy * sh + ki - pad_h == y.
        let ty = i32(y + pu(8u)) - i32(ki);
        if (ty < 0 || u32(ty) % sh != 0u) {
            continue;
        }
        let oy = u32(ty) / sh;
        if (oy >= oh) {
            continue;
        }
        for (var kj = 0u; kj < kw; kj++) {
            let tx = i32(xx + pu(9u)) - i32(kj);
            if (tx < 0 || u32(tx) % sw != 0u) {
                continue;
            }
            let ox = u32(tx) / sw;
            if (ox >= ow) {
                continue;
            }
            sum += col[(row_base + ki * kw + kj) * oh * ow + oy * ow + ox];
        }
    }
    out[i] = sum;
}
