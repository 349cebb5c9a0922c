// Kept hand-written for a measured speed: the program rendered from its one definition
// (pixelgrad_core::kernel::columns: one invocation per element, every division through
// `pg_idiv`) took 20-25 ms per launch on lavapipe for examples/cnn_ops' "im2col conv1
// [32,1,28,28]", about 10x relu's time in the same run, where this kernel takes 2.5x
// (bench/notes/2026-12-07-im2col-col2im-from-one-definition.md).
// [N, C, H, W] -> [N, C*kh*kw, OH*OW]; row r = c*kh*kw + i*kw + j, column p = oy*OW + ox; padded
// positions read 0. Grid (ceil(P / 256), C * B, images), the last two folded into loops when
// larger than the grid allows: every invocation owns one column p of one channel and writes
// one block of ROWS of its kh*kw rows (B = ceil(kh*kw / ROWS) blocks, 1 for every window up to
// 16x16), so no invocation writes more than ROWS values however large the window. The only
// divisions are p / OW, done in f32 (`div_small`), and, for B > 1, the block's channel and
// first row. Lavapipe (Mesa 22.3) runs u32 division lane by lane, and the old
// one-thread-per-output kernel, with eight of them per element, ran at ~12 M elements/s there.
// params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW, f32 1/OW, B].
const ROWS: u32 = 256u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
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
    let ow = pu(11u);
    let blocks = pu(13u);
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
    for (var cb = wid.y; cb < ch * blocks; cb += nwg.y) {
        var c = cb;
        var r0 = 0u;
        var ki0 = 0u;
        var kj0 = 0u;
        if (blocks > 1u) {
            c = cb / blocks;
            r0 = (cb - c * blocks) * ROWS;
            ki0 = r0 / kw;
            kj0 = r0 - ki0 * kw;
        }
        let r1 = min(r0 + ROWS, kk);
        for (var n = wid.z; n < images; n += nwg.z) {
            let src = (n * ch + c) * h;
            var dst = ((n * ch + c) * kk + r0) * positions + p;
            var ki = ki0;
            var kj = kj0;
            for (var r = r0; r < r1; r++) {
                let y = y0 + i32(ki);
                let xx = x0 + i32(kj);
                var v = 0.0;
                if (y >= 0 && y < i32(h) && xx >= 0 && xx < i32(w)) {
                    v = x[(src + u32(y)) * w + u32(xx)];
                }
                out[dst] = v;
                dst += positions;
                kj++;
                if (kj == kw) {
                    kj = 0u;
                    ki++;
                }
            }
        }
    }
}
