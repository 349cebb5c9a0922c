// Strided copy: the one data-movement kernel behind permute, expand, slice, pad (after a
// zero fill) and concat (one launch per input). Iterates over a box of `dims`; element at
// coordinates c goes from x[src_base + sum c*src_strides] to out[dst_base + sum c*dst_strides].
// params [n, rank, src_base, dst_base, dims[8] @4, src_strides[8] @12, dst_strides[8] @20].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    var rem = i;
    var src = pu(2u);
    var dst = pu(3u);
    let rank = pu(1u);
    for (var k = 0u; k < rank; k++) {
        let ax = rank - 1u - k;
        let d = pu(4u + ax);
        let c = rem % d;
        rem = rem / d;
        src += c * pu(12u + ax);
        dst += c * pu(20u + ax);
    }
    out[dst] = x[src];
}
