// fromYUV: a 4:2:0 frame packed as NV12 (bytes, four per u32 word, byte j of word w is byte
// 4w + j: the luma rows, width bytes each, then rows of ceil(width / 2) interleaved (Cb, Cr)
// pairs from byte width * height; YuvPlanes::to_nv12) to 8-bit RGBA pixels, one u32 each with
// R in the low byte (what from_pixels.wgsl reads). One invocation per chroma sample, which
// covers a 2x2 block of pixels; the grid is 2-D (x: chroma column / 256 workgroups, y: chroma
// row), so no index is divided. The colour formula is YuvMatrix::rgb's, in f32, and each
// channel is rounded as the host's to_rgba8 rounds: floor(clamp(v) * 255 + 0.5).
//
// params: 0 width, 1 height, 2..6 a, b, c, kr, kb (f32: Y' = Y a + b, Cb' = (Cb - 128) c).
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn byte_at(o: u32) -> f32 {
    return f32((src[o >> 2u] >> (8u * (o & 3u))) & 255u);
}

fn to_byte(v: f32) -> u32 {
    return u32(floor(clamp(v, 0.0, 1.0) * 255.0 + 0.5));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = pu(0u);
    let h = pu(1u);
    let cx = wid.x * 256u + lid;
    let cy = wid.y;
    let cw = (w + 1u) / 2u;
    if (cx >= cw) {
        return;
    }
    let a = pf(2u);
    let b = pf(3u);
    let kr = pf(5u);
    let kb = pf(6u);
    let o = w * h + 2u * (cy * cw + cx);
    let u = (byte_at(o) - 128.0) * pf(4u);
    let v = (byte_at(o + 1u) - 128.0) * pf(4u);
    let rv = 2.0 * (1.0 - kr) * v;
    let bu = 2.0 * (1.0 - kb) * u;
    let gd = 1.0 - kr - kb;
    for (var dy = 0u; dy < 2u; dy++) {
        let y = 2u * cy + dy;
        for (var dx = 0u; dx < 2u; dx++) {
            let x = 2u * cx + dx;
            if (x < w && y < h) {
                let i = y * w + x;
                let yp = byte_at(i) * a + b;
                let r = yp + rv;
                let bl = yp + bu;
                let g = (yp - kr * r - kb * bl) / gd;
                out[i] = to_byte(r) | (to_byte(g) << 8u) | (to_byte(bl) << 16u) | (255u << 24u);
            }
        }
    }
}
