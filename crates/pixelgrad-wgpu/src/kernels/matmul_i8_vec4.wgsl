// matmul_i8.wgsl for K and N multiples of 4 (most weight matrices): each A word holds four
// consecutive k of one row, and each vec4 of B four consecutive columns, so an invocation's
// 4x4 block takes eight loads per four k (the general kernel: 32). Same meaning, parameters
// and grid as matmul_i8.wgsl; b_batch_stride is in elements (a multiple of 4).
override SIGNED: bool = true;

@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// The four bytes of `w` (k, k+1, k+2, k+3), widened to i32.
fn unpack(w: u32) -> vec4<i32> {
    if (SIGNED) {
        return bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u);
    }
    return bitcast<vec4<i32>>((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu));
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
    // Word indices of each row's start (rows past the edge re-read the last one).
    let r = (vec4<u32>(row0, min(row0 + 1u, last_row), min(row0 + 2u, last_row), min(row0 + 3u, last_row)) * k_size + a_off) / 4u;
    let n4 = n_size / 4u;
    var bi = (b_off + col0) / 4u;
    var acc0 = vec4<i32>(0);
    var acc1 = vec4<i32>(0);
    var acc2 = vec4<i32>(0);
    var acc3 = vec4<i32>(0);
    for (var q = 0u; q < k_size / 4u; q++) {
        let b0 = vec4<i32>(b[bi]);
        let b1 = vec4<i32>(b[bi + n4]);
        let b2 = vec4<i32>(b[bi + 2u * n4]);
        let b3 = vec4<i32>(b[bi + 3u * n4]);
        bi += 4u * n4;
        let a0 = unpack(a[r.x + q]);
        let a1 = unpack(a[r.y + q]);
        let a2 = unpack(a[r.z + q]);
        let a3 = unpack(a[r.w + q]);
        acc0 += a0.x * b0 + a0.y * b1 + a0.z * b2 + a0.w * b3;
        acc1 += a1.x * b0 + a1.y * b1 + a1.z * b2 + a1.w * b3;
        acc2 += a2.x * b0 + a2.y * b1 + a2.z * b2 + a2.w * b3;
        acc3 += a3.x * b0 + a3.y * b1 + a3.z * b2 + a3.w * b3;
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
        c[o + 1u] = v.y;
        c[o + 2u] = v.z;
        c[o + 3u] = v.w;
    }
}
