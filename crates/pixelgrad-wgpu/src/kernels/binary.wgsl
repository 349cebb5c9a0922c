// Elementwise function of two inputs with broadcasting. OP is the `BinaryOp` code (see
// `ops/elementwise.rs`). FAST: both inputs have the output's shape, so index i is i everywhere.
// params [n, rank, dims[8] @2, a_strides[8] @10, b_strides[8] @18]; stride 0 = broadcast axis.
override OP: u32 = 0u;
override FAST: bool = false;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn apply(x: f32, y: f32) -> f32 {
    switch OP {
        case 0u: { return x + y; }
        case 1u: { return x - y; }
        case 2u: { return x * y; }
        case 3u: { return x / y; }
        case 4u: { return max(x, y); }
        case 5u: { return min(x, y); }
        case 6u: { return powf(x, y); }
        case 7u: { return select(0.0, 1.0, x > y); }
        case 8u: { return select(0.0, 1.0, x >= y); }
        case 9u: { return select(0.0, 1.0, x == y); }
        default: { return 0.0; }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    if (FAST) {
        out[i] = apply(a[i], b[i]);
        return;
    }
    // Decompose i into output coordinates, innermost axis first.
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    let rank = pu(1u);
    for (var k = 0u; k < rank; k++) {
        let ax = rank - 1u - k;
        let d = pu(2u + ax);
        let c = rem % d;
        rem = rem / d;
        ia += c * pu(10u + ax);
        ib += c * pu(18u + ax);
    }
    out[i] = apply(a[ia], b[ib]);
}
