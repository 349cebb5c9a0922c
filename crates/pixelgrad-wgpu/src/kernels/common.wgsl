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
