// Op::DepthwiseConv: x [N, C, H, W] and k [C, 1, kh, kw] -> [N, C, OH, OW], one filter per
// channel. Grid (ceil(OH * ceil(OW / 4) / 64), C, images), the last two folded into loops
// beyond the grid limit. Each invocation owns four horizontally adjacent outputs of one row of
// one channel and sums their kh*kw taps in (i, j) order: one weight load serves the four, and
// rows in the padding are skipped; columns in the padding read a clamped (in-bounds) index
// whose value is then replaced by zero, so no columns are written and nothing reads out of
// bounds. On CPU adapters (SwiftShader, lavapipe), where every load and loop trip costs
// instructions per lane, this does a fraction of the one-output-per-invocation work.
// params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW,
//         f32 1/ceil(OW / 4)].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let images = pu(0u);
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let kh = pu(4u);
    let kw = pu(5u);
    let sw = pu(7u);
    let oh = pu(10u);
    let ow = pu(11u);
    let quads = (ow + 3u) / 4u;
    let p = wid.x * 64u + lid;
    if (p >= oh * quads) {
        return;
    }
    let oy = div_small(p, quads, pf(12u));
    let ox = (p - oy * quads) * 4u;
    // Signed, since padding moves the window before the image.
    let y0 = i32(oy * pu(6u)) - i32(pu(8u));
    let x0 = i32(ox * sw) - i32(pu(9u));
    let cols = vec4<i32>(x0, x0 + i32(sw), x0 + 2 * i32(sw), x0 + 3 * i32(sw));
    let last = vec4<i32>(i32(w) - 1);
    let positions = oh * ow;
    let kk = kh * kw;
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            let src = (n * ch + c) * h;
            var acc = vec4<f32>(0.0);
            for (var ki = 0u; ki < kh; ki++) {
                let y = y0 + i32(ki);
                if (y < 0 || y >= i32(h)) {
                    continue;
                }
                let row = vec4<i32>(i32((src + u32(y)) * w));
                let taps = c * kk + ki * kw;
                for (var kj = 0u; kj < kw; kj++) {
                    let xx = cols + vec4<i32>(i32(kj));
                    let inside = (xx >= vec4<i32>(0)) & (xx <= last);
                    let at = vec4<u32>(row + clamp(xx, vec4<i32>(0), last));
                    let v = vec4<f32>(x[at.x], x[at.y], x[at.z], x[at.w]);
                    acc += select(vec4<f32>(0.0), v, inside) * k[taps + kj];
                }
            }
            let o = (n * ch + c) * positions + oy * ow + ox;
            out[o] = acc.x;
            if (ox + 1u < ow) {
                out[o + 1u] = acc.y;
            }
            if (ox + 2u < ow) {
                out[o + 2u] = acc.z;
            }
            if (ox + 3u < ow) {
                out[o + 3u] = acc.w;
            }
        }
    }
}
