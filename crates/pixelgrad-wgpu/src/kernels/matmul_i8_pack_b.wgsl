// Prologue of the dot4 8-bit matmuls (ops/matmul_i8_src.rs): B ([G, K, N] f32 whole numbers, the caller's promise that
// each is in [-128, 127]) packed four consecutive k per u32 word, column by column:
// word (g, q, n) holds b[g, 4q + j, n] as a two's-complement byte in byte j, zero bytes past
// K. A value that breaks the promise (fractional, NaN, outside [-128, 127]) packs as 0 and
// raises bit 4 of `status`, which the next readback turns into an error naming matmul_i8.
// params [words = G * K4 * N, N, K, K4]. 1-D grid, one word per invocation.
// Hand-written: a packing pass, not a matmul variant (one kernel, no tiles), so the matmul
// generators have nothing to say about it.
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> bp: array<u32>;
@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if (i >= pu(0u)) {
        return;
    }
    let n_size = pu(1u);
    let k_size = pu(2u);
    let k4 = pu(3u);
    let n = i % n_size;
    let q = (i / n_size) % k4;
    let g = i / (n_size * k4);
    let base = g * k_size * n_size + n;
    var word = 0u;
    var bad = false;
    for (var j = 0u; j < 4u; j++) {
        let k = q * 4u + j;
        if (k < k_size) {
            let v = b[base + k * n_size];
            // NaN fails every comparison, so it is refused too.
            if (v >= -128.0 && v <= 127.0 && v == floor(v)) {
                word |= (bitcast<u32>(i32(v)) & 0xffu) << (8u * j);
            } else {
                bad = true;
            }
        }
    }
    if (bad) {
        atomicOr(&status[0], 4u);
        word = 0u;
    }
    bp[i] = word;
}
