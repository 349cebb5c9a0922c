// Product with block-quantised weights kept packed (Op::MatMulNBits). The weight's bytes stay
// as uploaded: four per u32 word (byte e in bits 8 * (e % 4) of word e / 4, little-endian).
// Row n of W^T holds k_blocks blocks of `blob` bytes; value j of a block is byte j (8 bits)
// or the low nibble of byte j / 2 for even j, the high for odd (4 bits). The value is
// dequantised where it is read: W[k, n] = (q - zeros[n, k / block]) * scales[n, k / block].
// Without TRANS, a [M, K] x W -> c [M, N]; with TRANS, a [M, N] x W^T -> c [M, K]; with
// DEQUANT, W^T itself -> c [N, K].
// params [M, N, K, block, k_blocks, blob, bits, invocations].
//
// Without TRANS (inference), each invocation computes ROWS (1 or 4) rows of one column n:
// every weight value is unpacked once and multiplied into ROWS rows (a vec4 of them), and
// where a block starts on a word (blob a multiple of 4 bytes, true for every block size
// onnxruntime's quantiser writes) a word is read once for its 8 nibbles or 4 bytes, not once
// per value. With TRANS (the gradient of `a`), one invocation per element of c, value by value.
//
// Hand-written, not rendered by the matmul generators (ops/matmul_tiled_src.rs,
// matmul_i8_src.rs, matmul_cpu_src.rs): it is another algorithm, not a tile or dtype variant of
// theirs (no workgroup tiles; the weight dequantised block by block where it is read). The
// row blocking and word reads measured 1.2-3.8x faster (typically 2x) than one invocation per
// output reading value by value, on lavapipe; from 8 rows the launcher dequantises with DEQUANT
// and runs the f32 matmul instead, 3-18x faster again (bench/notes/2026-12-07-matmul-nbits-row-blocks.md).
override TRANS: bool = false;
override ROWS: u32 = 1u;
override BITS: u32 = 4u;
// Instead of a product, writes the dequantised weight as f32 [N, K] into c (one invocation per
// value; `a` is not read): a product of many rows then runs as the plain f32 matmul of it.
override DEQUANT: bool = false;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> zeros: array<f32>;
@group(0) @binding(5) var<storage, read_write> c: array<f32>;

// Value i (0-based) of the run of packed values starting at byte `start`.
fn packed_value(start: u32, i: u32) -> f32 {
    if (BITS == 8u) {
        let e = start + i;
        return f32((q[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
    }
    let e = start + (i >> 1u);
    let byte = (q[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu;
    return f32((byte >> ((i & 1u) * 4u)) & 15u);
}

// Row r's value at column k (r clamped by the caller).
fn a_at(r: u32, k: u32, k_size: u32) -> f32 {
    return a[r * k_size + k];
}

// The four rows' values at column k.
fn a4(rows: vec4<u32>, k: u32, k_size: u32) -> vec4<f32> {
    return vec4<f32>(a_at(rows.x, k, k_size), a_at(rows.y, k, k_size), a_at(rows.z, k, k_size), a_at(rows.w, k, k_size));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = flat_index(wid, nwg, lid);
    if (e >= pu(7u)) {
        return;
    }
    let m_size = pu(0u);
    let n_size = pu(1u);
    let k_size = pu(2u);
    let block = pu(3u);
    let k_blocks = pu(4u);
    let blob = pu(5u);
    if (DEQUANT) {
        let n = e / k_size;
        let k = e % k_size;
        let p = n * k_blocks + k / block;
        c[e] = (packed_value(p * blob, k % block) - zeros[p]) * scales[p];
        return;
    }
    if (TRANS) {
        // c[row, k] = sum_n a[row, n] W[k, n]: value k of every row of the packed weight.
        let row = e / k_size;
        let k = e % k_size;
        let b = k / block;
        let i = k % block;
        var acc = 0.0;
        for (var n = 0u; n < n_size; n++) {
            let p = n * k_blocks + b;
            acc += a[row * n_size + n] * ((packed_value(p * blob, i) - zeros[p]) * scales[p]);
        }
        c[e] = acc;
        return;
    }
    // c[row, n] = sum_k a[row, k] W[k, n] for ROWS rows: row n of the packed weight, block by block.
    let first = (e / n_size) * ROWS;
    let n = e % n_size;
    let last = m_size - 1u;
    let rows = vec4<u32>(first, min(first + 1u, last), min(first + 2u, last), min(first + 3u, last));
    let per_word = 32u / BITS;
    // Whole words per block where blocks start on words; 0 reads value by value.
    let aligned = (blob & 3u) == 0u;
    var acc = vec4<f32>(0.0);
    for (var b = 0u; b < k_blocks; b++) {
        let p = n * k_blocks + b;
        let z = zeros[p];
        let k0 = b * block;
        let len = min(block, k_size - k0);
        let start = p * blob;
        var part = vec4<f32>(0.0);
        var i = 0u;
        if (aligned) {
            let words = len / per_word;
            for (var w = 0u; w < words; w++) {
                let word = q[(start >> 2u) + w];
                let k = k0 + w * per_word;
                for (var t = 0u; t < per_word; t++) {
                    let v = f32((word >> (t * BITS)) & ((1u << BITS) - 1u)) - z;
                    if (ROWS == 1u) {
                        part.x += a_at(rows.x, k + t, k_size) * v;
                    } else {
                        part += a4(rows, k + t, k_size) * v;
                    }
                }
            }
            i = words * per_word;
        }
        for (; i < len; i++) {
            let v = packed_value(start, i) - z;
            if (ROWS == 1u) {
                part.x += a_at(rows.x, k0 + i, k_size) * v;
            } else {
                part += a4(rows, k0 + i, k_size) * v;
            }
        }
        acc += part * scales[p];
    }
    c[first * n_size + n] = acc.x;
    if (ROWS == 4u) {
        if (first + 1u <= last) { c[(first + 1u) * n_size + n] = acc.y; }
        if (first + 2u <= last) { c[(first + 2u) * n_size + n] = acc.z; }
        if (first + 3u <= last) { c[(first + 3u) * n_size + n] = acc.w; }
    }
}
