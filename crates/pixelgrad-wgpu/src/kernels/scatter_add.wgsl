// Scatter-add as a gather: out[o, t, r] = sum over j of src[o, j, r] where idx[o, j, r] == t.
// One thread per output element loops over the source axis, so no two threads write one
// address (WGSL has no float atomics) and sums come in a fixed order.
// params [n_out, size, len, inner].
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    let size = pu(1u);
    let len = pu(2u);
    let inner = pu(3u);
    let r = i % inner;
    let t = f32((i / inner) % size);
    let o = i / (inner * size);
    let base = o * len * inner + r;
    var sum = 0.0;
    for (var j = 0u; j < len; j++) {
        let k = base + j * inner;
        if (idx[k] == t) {
            sum += src[k];
        }
    }
    out[i] = sum;
}
