// Batched matmul for large matrices: like matmul.wgsl but a 16x16 workgroup computes a
// 128x128 tile of C and each thread an 8x8 block (rows ty + 16i, columns tx + 16j), with K in
// steps of 8. Twice the work per shared-memory read of the 64x64 kernel, at the price of
// fewer workgroups, so the launcher picks it only when both M and N are large.
// params [M, N, K, a_batch_stride, b_batch_stride, batches summed]; grid (ceil(N/128),
// ceil(M/128), batch), or z = 1 when every output sums that many products.
override TRANS_A: bool = false;
override TRANS_B: bool = false;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Tiles stored k-major: as_[k * 128 + m], bs[k * 128 + n].
var<workgroup> as_: array<f32, 1024>;
var<workgroup> bs: array<f32, 1024>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let m_size = pu(0u);
    let n_size = pu(1u);
    let k_size = pu(2u);
    let nb = pu(5u);
    let c_off = wid.z * m_size * n_size;
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let tx = lid % 16u;
    let ty = lid / 16u;

    // acc[2i] holds columns tx + 16j for j < 4 of row i, acc[2i + 1] those for j >= 4.
    var acc: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = vec4<f32>(0.0);
    }

    // Batches summed into this output (1: one batch entry, wid.z).
    for (var zb = 0u; zb < nb; zb++) {
    let a_off = (wid.z + zb) * pu(3u);
    let b_off = (wid.z + zb) * pu(4u);
    for (var k0 = 0u; k0 < k_size; k0 += 8u) {
        for (var r = 0u; r < 4u; r++) {
            let e = lid + 256u * r;
            var am: u32;
            var ak: u32;
            if (TRANS_A) {
                am = e % 128u;
                ak = e / 128u;
            } else {
                am = e / 8u;
                ak = e % 8u;
            }
            let gm = row0 + am;
            let gk = k0 + ak;
            var av = 0.0;
            if (gm < m_size && gk < k_size) {
                if (TRANS_A) {
                    av = a[a_off + gk * m_size + gm];
                } else {
                    av = a[a_off + gm * k_size + gk];
                }
            }
            as_[ak * 128u + am] = av;
            var bk: u32;
            var bn: u32;
            if (TRANS_B) {
                bn = e / 8u;
                bk = e % 8u;
            } else {
                bn = e % 128u;
                bk = e / 128u;
            }
            let gn = col0 + bn;
            let gk2 = k0 + bk;
            var bv = 0.0;
            if (gn < n_size && gk2 < k_size) {
                if (TRANS_B) {
                    bv = b[b_off + gn * k_size + gk2];
                } else {
                    bv = b[b_off + gk2 * n_size + gn];
                }
            }
            bs[bk * 128u + bn] = bv;
        }
        workgroupBarrier();
        for (var k = 0u; k < 8u; k++) {
            let bb = k * 128u + tx;
            let b_lo = vec4<f32>(bs[bb], bs[bb + 16u], bs[bb + 32u], bs[bb + 48u]);
            let b_hi = vec4<f32>(bs[bb + 64u], bs[bb + 80u], bs[bb + 96u], bs[bb + 112u]);
            let ab = k * 128u + ty;
            for (var i = 0u; i < 8u; i++) {
                let av = vec4<f32>(as_[ab + 16u * i]);
                acc[2u * i] = fma(av, b_lo, acc[2u * i]);
                acc[2u * i + 1u] = fma(av, b_hi, acc[2u * i + 1u]);
            }
        }
        workgroupBarrier();
    }
    }

    for (var i = 0u; i < 8u; i++) {
        let row = row0 + ty + 16u * i;
        if (row >= m_size) {
            continue;
        }
        for (var j = 0u; j < 8u; j++) {
            let col = col0 + tx + 16u * j;
            if (col < n_size) {
                c[c_off + row * n_size + col] = acc[2u * i + j / 4u][j % 4u];
            }
        }
    }
}
