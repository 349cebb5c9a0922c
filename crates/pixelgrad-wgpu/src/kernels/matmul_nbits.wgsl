// Product with block-quantised weights kept packed (Op::MatMulNBits). The weight's bytes stay
// as uploaded: four per u32 word (byte e in bits 8 * (e % 4) of word e / 4, little-endian).
// Row n of W^T holds k_blocks blocks of `blob` bytes; value j of a block is byte j (8 bits)
// or the low nibble of byte j / 2 for even j, the high for odd (4 bits). The value is
// dequantised where it is read: W[k, n] = (q - zeros[n, k / block]) * scales[n, k / block].
// Without TRANS, a [M, K] x W -> c [M, N]; with TRANS, a [M, N] x W^T -> c [M, K].
// One invocation per element of c, accumulating in f32 along k (or n), one block at a time.
// params [M, N, K, block, k_blocks, blob, bits, len(c)].
// Hand-written, not rendered by the matmul generators (ops/matmul_tiled_src.rs,
// matmul_i8_src.rs, matmul_cpu_src.rs): it is another algorithm, not a tile or dtype variant of
// theirs (no tiles, no register block; one invocation per output, the weight dequantised
// block by block where it is read, the bit width a run-time parameter), and it is the only
// kernel of its kind, so there is nothing to generate it with. No speed was measured for it.
override TRANS: bool = false;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> zeros: array<f32>;
@group(0) @binding(5) var<storage, read_write> c: array<f32>;

// Value i (0-based) of the run of packed values starting at byte `start`.
fn packed_value(start: u32, i: u32) -> f32 {
    if (pu(6u) == 8u) {
        let e = start + i;
        return f32((q[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
    }
    let e = start + (i >> 1u);
    let byte = (q[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
    return f32((byte >> ((i & 1u) * 4u)) & 15u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = flat_index(wid, nwg, lid);
    if (e >= pu(7u)) {
        return;
    }
    let n_size = pu(1u);
    let k_size = pu(2u);
    let block = pu(3u);
    let k_blocks = pu(4u);
    let blob = pu(5u);
    var acc = 0.0;
    if (!TRANS) {
        // c[row, n] = sum_k a[row, k] W[k, n]: row n of the packed weight, block by block.
        let row = e / n_size;
        let n = e % n_size;
        for (var b = 0u; b < k_blocks; b++) {
            let p = n * k_blocks + b;
            let s = scales[p];
            let z = zeros[p];
            let k0 = b * block;
            let len = min(block, k_size - k0);
            let start = p * blob;
            let a0 = row * k_size + k0;
            var part = 0.0;
            for (var i = 0u; i < len; i++) {
                part += a[a0 + i] * (packed_value(start, i) - z);
            }
            acc += part * s;
        }
    } else {
        // c[row, k] = sum_n a[row, n] W[k, n]: value k of every row of the packed weight.
        let row = e / k_size;
        let k = e % k_size;
        let b = k / block;
        let i = k % block;
        for (var n = 0u; n < n_size; n++) {
            let p = n * k_blocks + b;
            acc += a[row * n_size + n] * ((packed_value(p * blob, i) - zeros[p]) * scales[p]);
        }
    }
    c[e] = acc;
}
