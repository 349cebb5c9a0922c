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

// x^p with the CPU's meaning for negative bases (NaN unless p is whole; odd p keeps the sign)
// and for zero bases (x^0 = 1, 0^p = 0 for p > 0, inf for p < 0).
fn powf(x: f32, p: f32) -> f32 {
    if (p == 0.0) {
        return 1.0;
    }
    // Exact for the common small powers (exp2/log2 would round).
    if (p == 1.0) {
        return x;
    }
    if (p == 2.0) {
        return x * x;
    }
    if (x == 0.0) {
        return select(from_bits(0x7f800000u), 0.0, p > 0.0);
    }
    let r = exp2(p * log2(abs(x)));
    if (x < 0.0) {
        if (p != floor(p)) {
            return from_bits(0x7fc00000u);
        }
        let half = p * 0.5;
        return select(r, -r, half != floor(half));
    }
    return r;
}

// sin and cos accurate to about 1e-7 absolute for |x| up to ~1e4. The built-ins are only
// specified to 2^-11 absolute in WGSL, and SwiftShader's (Chromium without a GPU) miss the
// conformance tolerance. Cody-Waite reduction by pi/2 with the constant in three parts (the
// first has 8 significant bits, so k * 1.5703125 is exact), then Taylor polynomials on
// [-pi/4, pi/4]. Returns (sin x, cos x). NaN and infinities give NaN.
fn sincos(x: f32) -> vec2<f32> {
    let k = round(x * 0.63661977236758134);
    var r = x - k * 1.5703125;
    r = r - k * 4.837512969970703125e-4;
    r = r - k * 7.54978995489188216e-8;
    let r2 = r * r;
    let s = r * (1.0 + r2 * (-0.16666667 + r2 * (8.3333333e-3 + r2 * (-1.9841270e-4 + r2 * 2.7557319e-6))));
    let c = 1.0 + r2 * (-0.5 + r2 * (4.1666668e-2 + r2 * (-1.3888889e-3 + r2 * (2.4801587e-5 - r2 * 2.7557319e-7))));
    // x = k * pi/2 + r; the quadrant is k mod 4 (two's complement makes -1 & 3 == 3).
    switch (i32(k) & 3) {
        case 0: { return vec2<f32>(s, c); }
        case 1: { return vec2<f32>(c, -s); }
        case 2: { return vec2<f32>(-s, -c); }
        default: { return vec2<f32>(-c, s); }
    }
}
