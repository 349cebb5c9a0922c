// Elementwise function of one contiguous input. OP is the `UnaryOp` code (see
// `ops/elementwise.rs`); params [n, p0, p1] carry the scalar arguments.
override OP: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn stable_tanh(v: f32) -> f32 {
    // Some drivers overflow inside tanh for large |v|; it is +-1 in f32 beyond 10 anyway.
    if (abs(v) > 10.0) {
        return sign(v);
    }
    return tanh(v);
}

fn apply(v: f32, p0: f32, p1: f32) -> f32 {
    switch OP {
        case 0u: { return -v; }
        case 1u: { return exp(v); }
        case 2u: { return log(v); }
        case 3u: { return sqrt(v); }
        case 4u: { return 1.0 / v; }
        case 5u: { return stable_tanh(v); }
        case 6u: { return 1.0 / (1.0 + exp(-v)); }
        case 7u: { return abs(v); }
        case 8u: { return sincos(v).x; }
        case 9u: { return sincos(v).y; }
        case 10u: { return v * p0 + p1; }
        case 11u: { return powf(v, p0); }
        case 12u: { return max(v, p0); }
        case 13u: { return min(v, p0); }
        case 14u: { return select(0.0, 1.0, v > p0); }
        default: { return v; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    out[i] = apply(x[i], pf(1u), pf(2u));
}
