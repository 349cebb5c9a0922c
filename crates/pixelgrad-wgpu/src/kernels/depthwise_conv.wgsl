// Op::DepthwiseConv: x [N, C, H, W] and k [C, 1, kh, kw] -> [N, C, OH, OW], one filter per
// channel. Grid (ceil(OH * ceil(OW / 4) / 64), C, images), the last two folded into loops
// beyond the grid limit. Each invocation owns four horizontally adjacent outputs of one row of
// one channel and sums their taps inside the image in (i, j) order: only the window rows inside
// the image (`tap_range`), and the columns inside it for at least one of the four outputs.
// When the four windows' column ranges overlap or touch (stride_w <= W), one weight load serves
// the four: columns in the padding for some of them read a clamped (in-bounds) index whose
// value is then replaced by zero, so no columns are written and nothing reads out of bounds.
// Otherwise (a stride wider than the image) each output sums its own columns. Either way an
// invocation runs at most min(kh, H) x 4 min(kw, W) taps, however large the window. On CPU
// adapters (SwiftShader, lavapipe), where every load and loop trip costs instructions per
// lane, this does a fraction of the one-output-per-invocation work.
// Kept hand-written for that measured speed: the program rendered from the op's one definition
// (`pixelgrad_core::kernel::convolutions`, validated in validate.rs), one output per
// invocation, took 1.42x (5x5 stride 1, [4,16,32,32]), 1.44x (3x3 stride 1, [8,32,28,28]) and
// 1.59x (3x3 stride 2) this kernel's time on lavapipe, medians of 4 interleaved runs
// (bench/notes/2026-12-07-depthwise-from-one-definition.md).
// params [N, C, H, W, kh, kw, stride_h, stride_w, pad_h, pad_w, OH, OW,
//         f32 1/ceil(OW / 4)].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// Whether the window fits in the image (kh <= H and kw <= W), as in every real model: then
// every lane loops over all kh x kw taps, skipping rows and masking columns in the padding,
// which is bounded by the image already, and the shader has no bounds code. The per-lane
// bounds below cost SwiftShader 1.13x on MobileNet v1 (104 against 92 ms, medians of 5
// interleaved runs; bench/notes/2026-12-07-webgpu-inference-bisect.md).
override INSIDE: bool = false;

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
    if (INSIDE) {
        taps_inside(wid, nwg, oy, ox);
        return;
    }
    let ys = oy * pu(6u);
    let rows = tap_range(ys, kh, pu(8u), h);
    let pw = pu(9u);
    // Outputs of this invocation that exist, and their windows' starts (padded columns).
    let lanes = min(ow - ox, 4u);
    let xs = ox * sw;
    let kk = kh * kw;
    let positions = oh * ow;
    // Columns inside the image for the first output, and for the last one that exists.
    let first = tap_range(xs, kw, pw, w);
    let last = tap_range(xs + (lanes - 1u) * sw, kw, pw, w);
    if (sw <= w) {
        // The four ranges overlap or touch: their union is one range, last.x..first.y (an
        // empty range of the last output has last.x = kw or first.y = 0: nothing to sum).
        let lo = min(last.x, first.x);
        let hi = max(first.y, last.y);
        let x0 = i32(xs) - i32(pw);
        let cols = vec4<i32>(x0, x0 + i32(sw), x0 + 2 * i32(sw), x0 + 3 * i32(sw));
        let right = vec4<i32>(i32(w) - 1);
        for (var c = wid.y; c < ch; c += nwg.y) {
            for (var n = wid.z; n < images; n += nwg.z) {
                let src = (n * ch + c) * h;
                var acc = vec4<f32>(0.0);
                for (var ki = rows.x; ki < rows.y; ki++) {
                    let row = vec4<i32>(i32((src + ys + ki - pu(8u)) * w));
                    let taps = c * kk + ki * kw;
                    for (var kj = lo; kj < hi; kj++) {
                        let xx = cols + vec4<i32>(i32(kj));
                        let inside = (xx >= vec4<i32>(0)) & (xx <= right);
                        let at = vec4<u32>(row + clamp(xx, vec4<i32>(0), right));
                        let v = vec4<f32>(x[at.x], x[at.y], x[at.z], x[at.w]);
                        acc += select(vec4<f32>(0.0), v, inside) * k[taps + kj];
                    }
                }
                store4((n * ch + c) * positions + oy * ow + ox, acc, lanes);
            }
        }
        return;
    }
    // A stride wider than the image: the four column ranges are disjoint, each summed alone.
    for (var c = wid.y; c < ch; c += nwg.y) {
        for (var n = wid.z; n < images; n += nwg.z) {
            let src = (n * ch + c) * h;
            var acc = vec4<f32>(0.0);
            for (var l = 0u; l < lanes; l++) {
                let start = xs + l * sw;
                let r = tap_range(start, kw, pw, w);
                var sum = 0.0;
                for (var ki = rows.x; ki < rows.y; ki++) {
                    let row = (src + ys + ki - pu(8u)) * w + start - pw;
                    let taps = c * kk + ki * kw;
                    for (var kj = r.x; kj < r.y; kj++) {
                        sum += x[row + kj] * k[taps + kj];
                    }
                }
                acc[l] = sum;
            }
            store4((n * ch + c) * positions + oy * ow + ox, acc, lanes);
        }
    }
}

// The first `lanes` (1 to 4) values of `acc` at out[o..].
fn store4(o: u32, acc: vec4<f32>, lanes: u32) {
    out[o] = acc.x;
    if (lanes > 1u) {
        out[o + 1u] = acc.y;
    }
    if (lanes > 2u) {
        out[o + 2u] = acc.z;
    }
    if (lanes > 3u) {
        out[o + 3u] = acc.w;
    }
}

// The INSIDE path: all kh x kw taps of the four outputs at (oy, ox..ox+4), one weight load for
// the four; rows in the padding skipped, columns in it read a clamped index and add zero.
fn taps_inside(wid: vec3<u32>, nwg: vec3<u32>, oy: u32, ox: u32) {
    let images = pu(0u);
    let ch = pu(1u);
    let h = pu(2u);
    let w = pu(3u);
    let kh = pu(4u);
    let kw = pu(5u);
    let sw = pu(7u);
    let ow = pu(11u);
    // Signed, since padding moves the window before the image.
    let y0 = i32(oy * pu(6u)) - i32(pu(8u));
    let x0 = i32(ox * sw) - i32(pu(9u));
    let cols = vec4<i32>(x0, x0 + i32(sw), x0 + 2 * i32(sw), x0 + 3 * i32(sw));
    let right = vec4<i32>(i32(w) - 1);
    let positions = pu(10u) * ow;
    let kk = kh * kw;
    let lanes = min(ow - ox, 4u);
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
                    let inside = (xx >= vec4<i32>(0)) & (xx <= right);
                    let at = vec4<u32>(row + clamp(xx, vec4<i32>(0), right));
                    let v = vec4<f32>(x[at.x], x[at.y], x[at.z], x[at.w]);
                    acc += select(vec4<f32>(0.0), v, inside) * k[taps + kj];
                }
            }
            store4((n * ch + c) * positions + oy * ow + ox, acc, lanes);
        }
    }
}
