// From pixels: 8-bit RGBA pixels (one u32 each, R in the low byte; rows pu(2) words apart)
// resampled, normalised and laid out into a model input, one invocation per output pixel.
// The filter is pixelgrad_core::image's: output pixel o of the content box samples
// c = (o + 0.5) * scale + offset - 0.5 with a triangle of half-width `support`, weights
// normalised, indices clamped to the edge.
//
// params: 0 src_w, 1 src_h, 2 row words, 3 out_w, 4 out_h, 5 channels, 6 layout (0 nchw,
// 1 nhwc), 7 x start, 8 x len, 9 y start, 10 y len, 11..13 x scale, offset, support (f32),
// 14..16 the same for y, 17..20 mul[c], 21..24 add[c], 25..28 padding value[c] (normalised).
@group(0) @binding(1) var<storage, read> px: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// The filter of one axis at content pixel o: first and last tap, centre, support.
struct Taps {
    j0: i32,
    j1: i32,
    c: f32,
    s: f32,
}

fn taps(o: u32, scale: f32, offset: f32, s: f32) -> Taps {
    let c = (f32(o) + 0.5) * scale + offset - 0.5;
    return Taps(i32(floor(c - s)) + 1, i32(ceil(c + s)) - 1, c, s);
}

fn weight(t: Taps, j: i32) -> f32 {
    return max(0.0, 1.0 - abs(f32(j) - t.c) / t.s);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    let ow = pu(3u);
    let oh = pu(4u);
    if (i >= ow * oh) {
        return;
    }
    let ox = i % ow;
    let oy = i / ow;
    let ch = pu(5u);
    let xs = pu(7u);
    let ys = pu(9u);
    let inside = ox >= xs && ox < xs + pu(8u) && oy >= ys && oy < ys + pu(10u);
    var v = vec4<f32>(0.0);
    if (inside) {
        let tx = taps(ox - xs, pf(11u), pf(12u), pf(13u));
        let ty = taps(oy - ys, pf(14u), pf(15u), pf(16u));
        let last_x = i32(pu(0u)) - 1;
        let last_y = i32(pu(1u)) - 1;
        let row_words = pu(2u);
        var wx_sum = 0.0;
        for (var jx = tx.j0; jx <= tx.j1; jx++) {
            wx_sum += weight(tx, jx);
        }
        var wy_sum = 0.0;
        for (var jy = ty.j0; jy <= ty.j1; jy++) {
            let wy = weight(ty, jy);
            if (wy <= 0.0) {
                continue;
            }
            wy_sum += wy;
            let row = u32(clamp(jy, 0, last_y)) * row_words;
            var acc = vec4<f32>(0.0);
            for (var jx = tx.j0; jx <= tx.j1; jx++) {
                let wx = weight(tx, jx);
                if (wx > 0.0) {
                    acc += wx * unpack4x8unorm(px[row + u32(clamp(jx, 0, last_x))]);
                }
            }
            v += wy * acc;
        }
        v = v / (wx_sum * wy_sum);
    }
    let nhwc = pu(6u) == 1u;
    if (ch == 1u) {
        let y = dot(v.xyz, vec3<f32>(0.299, 0.587, 0.114));
        out[i] = select(pf(25u), y * pf(17u) + pf(21u), inside);
        return;
    }
    for (var c = 0u; c < ch; c++) {
        let val = select(pf(25u + c), v[c] * pf(17u + c) + pf(21u + c), inside);
        let at = select((c * oh + oy) * ow + ox, i * ch + c, nhwc);
        out[at] = val;
    }
}
