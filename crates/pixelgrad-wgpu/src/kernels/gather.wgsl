// out[o, j, r] = x[o, idx[o, j, r], r] with shapes viewed as [outer, len, inner]. An index
// that is not a whole number in [0, len_x) reads 0 and raises bit 1 of `status`, which the
// next readback turns into an error naming gather.
// params [n_out, len_x, len_idx, inner].
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    let len_x = pu(1u);
    let len_idx = pu(2u);
    let inner = pu(3u);
    let r = i % inner;
    let o = i / (inner * len_idx);
    let t = idx[i];
    var v = 0.0;
    // NaN fails every comparison, so it lands in the error branch too.
    if (t >= 0.0 && t < f32(len_x) && t == floor(t)) {
        v = x[(o * len_x + u32(t)) * inner + r];
    } else {
        atomicOr(&status[0], 1u);
    }
    out[i] = v;
}
