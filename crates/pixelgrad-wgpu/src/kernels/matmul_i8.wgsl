// Exact integer matmul of 8-bit weights (Op::MatMulI8): C[g] = A[g] * B[g]. A is packed four
// elements per u32 word (element e in byte e % 4 of word e / 4, little-endian), unpacked with
// shifts (sign-extended when SIGNED); B holds f32 whole numbers, converted to i32 (toward
// zero); products and sums are i32 (wrapping), and C = f32(sum), rounded to nearest.
// Each invocation computes a 4x4 block of C, an 8x8 workgroup a 32x32 tile; edge blocks
// re-read the last row / column and store only what is inside C. No workgroup memory.
// params [M, N, K, a_batch_stride, b_batch_stride] in elements; batch stride 0 broadcasts.
// Grid (ceil(N/32), ceil(M/32), batch).
override SIGNED: bool = true;

@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Element e of A, widened to i32.
fn a_at(e: u32) -> i32 {
    let w = a[e >> 2u];
    let sh = (e & 3u) * 8u;
    if (SIGNED) {
        // The byte into the top 8 bits, then an arithmetic shift back: sign extension.
        return bitcast<i32>(w << (24u - sh)) >> 24u;
    }
    return i32((w >> sh) & 0xffu);
}

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let m_size = pu(0u);
    let n_size = pu(1u);
    let k_size = pu(2u);
    let a_off = wid.z * pu(3u);
    let b_off = wid.z * pu(4u);
    let c_off = wid.z * m_size * n_size;
    let row0 = wid.y * 32u + lid.y * 4u;
    let col0 = wid.x * 32u + lid.x * 4u;
    if (row0 >= m_size || col0 >= n_size) {
        return;
    }
    let last_row = m_size - 1u;
    let last_col = n_size - 1u;
    let r = vec4<u32>(row0, min(row0 + 1u, last_row), min(row0 + 2u, last_row), min(row0 + 3u, last_row)) * k_size + a_off;
    let cc = vec4<u32>(col0, min(col0 + 1u, last_col), min(col0 + 2u, last_col), min(col0 + 3u, last_col)) + b_off;
    var acc0 = vec4<i32>(0);
    var acc1 = vec4<i32>(0);
    var acc2 = vec4<i32>(0);
    var acc3 = vec4<i32>(0);
    for (var p = 0u; p < k_size; p++) {
        let bp = p * n_size;
        let bv = vec4<i32>(vec4<f32>(b[cc.x + bp], b[cc.y + bp], b[cc.z + bp], b[cc.w + bp]));
        acc0 += a_at(r.x + p) * bv;
        acc1 += a_at(r.y + p) * bv;
        acc2 += a_at(r.z + p) * bv;
        acc3 += a_at(r.w + p) * bv;
    }
    let acc = array<vec4<i32>, 4>(acc0, acc1, acc2, acc3);
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + i;
        if (row >= m_size) {
            break;
        }
        let v = vec4<f32>(acc[i]);
        let o = c_off + row * n_size + col0;
        c[o] = v.x;
        if (col0 + 1u < n_size) {
            c[o + 1u] = v.y;
        }
        if (col0 + 2u < n_size) {
            c[o + 2u] = v.z;
        }
        if (col0 + 3u < n_size) {
            c[o + 3u] = v.w;
        }
    }
}
