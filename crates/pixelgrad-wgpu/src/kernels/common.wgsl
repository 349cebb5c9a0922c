// Prelude prepended to every kernel (see `pipelines.rs`). Shapes, strides and scalar
// parameters arrive in a 256-byte uniform slot, read as 64 u32 words, so no pipeline depends
// on a tensor's shape.
struct Params {
    w: array<vec4<u32>, 16>,
}

@group(0) @binding(0) var<uniform> params: Params;

// Word `i` of the parameter slot.
fn pu(i: u32) -> u32 {
    return params.w[i >> 2u][i & 3u];
}

// Word `i` reinterpreted as f32.
fn pf(i: u32) -> f32 {
    return bitcast<f32>(pu(i));
}

// Flat invocation index of a 1-D launch whose workgroups were folded into a 2-D grid to stay
// under maxComputeWorkgroupsPerDimension (workgroups are 256 wide).
fn flat_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x) * 256u + lid;
}

// Same for launches with one workgroup per output element.
fn flat_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// A float from its bits, at run time (constant inf / NaN are compile errors in WGSL).
fn from_bits(b: u32) -> f32 {
    return bitcast<f32>(b);
}

// a / b for a < 2^24 and b > 0, with inv = 1 / b in f32: the f32 quotient is within one of
// the truth (both roundings are below 2^-23 relative), and the remainder's sign fixes it.
fn div_small(a: u32, b: u32, inv: f32) -> u32 {
    let q = u32(f32(a) * inv);
    let r = i32(a) - i32(q * b);
    return q - select(0u, 1u, r < 0) + select(0u, 1u, r >= i32(b));
}

// ceil(a / b) for a < 2^24 and b > 0 (as div_small), without adding b - 1 to a (a stride may be
// large).
fn ceil_div_small(a: u32, b: u32, inv: f32) -> u32 {
    let q = div_small(a, b, inv);
    return q + select(0u, 1u, q * b < a);
}

// The window offsets lo..hi (of k) of a window starting at padded coordinate `start` whose
// input coordinate start + t - pad lies inside 0..size: at most min(k, size) of them, so
// window loops over them are bounded by the image however large the window or its padding
// (for lo < hi, start + lo >= pad). Arguments below 2^31 (window.rs checks sizes and padding).
fn tap_range(start: u32, k: u32, pad: u32, size: u32) -> vec2<u32> {
    let lo = min(select(0u, pad - start, pad > start), k);
    let hi = clamp(select(0u, pad + size - start, pad + size > start), lo, k);
    return vec2<u32>(lo, hi);
}
