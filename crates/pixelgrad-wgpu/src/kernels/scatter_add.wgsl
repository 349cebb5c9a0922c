// Scatter-add as a gather: out[o, t, r] = sum over j of src[o, j, r] where idx[o, j, r] == t.
// One thread per output element loops over the source axis, so no two threads write one
// address (WGSL has no float atomics) and sums come in a fixed order.
// Threads of target row 0 also vet every index they pass (each index is seen by exactly one
// of them): one that is not a whole number in [0, size) raises bit 2 of `status`, which the
// next readback turns into an error naming scatter_add.
// params [n_out, size, len, inner].
@group(0) @binding(1) var<storage, read> src: array<f32>;
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
    let size = pu(1u);
    let len = pu(2u);
    let inner = pu(3u);
    let r = i % inner;
    let ti = (i / inner) % size;
    let t = f32(ti);
    let fs = f32(size);
    let o = i / (inner * size);
    let base = o * len * inner + r;
    var sum = 0.0;
    for (var j = 0u; j < len; j++) {
        let k = base + j * inner;
        let v = idx[k];
        if (v == t) {
            sum += src[k];
        }
        if (ti == 0u && !(v >= 0.0 && v < fs && v == floor(v))) {
            atomicOr(&status[0], 2u);
        }
    }
    out[i] = sum;
}
