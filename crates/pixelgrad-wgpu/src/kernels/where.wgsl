// out = cond != 0 ? a : b, with broadcasting. FAST: all inputs have the output's shape.
// params [n, rank, dims[8] @2, cond_strides[8] @10, a_strides[8] @18, b_strides[8] @26].
override FAST: bool = false;

@group(0) @binding(1) var<storage, read> cond: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    if (FAST) {
        out[i] = select(b[i], a[i], cond[i] != 0.0);
        return;
    }
    var rem = i;
    var ic = 0u;
    var ia = 0u;
    var ib = 0u;
    let rank = pu(1u);
    for (var k = 0u; k < rank; k++) {
        let ax = rank - 1u - k;
        let d = pu(2u + ax);
        let c = rem % d;
        rem = rem / d;
        ic += c * pu(10u + ax);
        ia += c * pu(18u + ax);
        ib += c * pu(26u + ax);
    }
    out[i] = select(b[ib], a[ia], cond[ic] != 0.0);
}
