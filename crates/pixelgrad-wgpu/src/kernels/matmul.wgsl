// Batched matmul C[b] = A[b] * B[b], tiled through workgroup memory with register blocking:
// a 16x16 workgroup computes a 64x64 tile of C, each thread a 4x4 block (rows ty + 16i,
// columns tx + 16j, so neighbouring threads touch neighbouring addresses). K advances in steps
// of 16. TRANS_A / TRANS_B read A as [K, M] / B as [N, K]; the tile loads follow the memory
// order in each case so global reads stay coalesced.
// params [M, N, K, a_batch_stride, b_batch_stride, batches summed]; batch stride 0 broadcasts;
// with more than one batch summed, every output sums that many products (the grid's z is 1). Grid
// (ceil(N/64), ceil(M/64), batch).
override TRANS_A: bool = false;
override TRANS_B: bool = false;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Tiles stored k-major: as_[k * 64 + m], bs[k * 64 + n].
var<workgroup> as_: array<f32, 1024>;
var<workgroup> bs: array<f32, 1024>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let m_size = pu(0u);
    let n_size = pu(1u);
    let k_size = pu(2u);
    let nb = pu(5u);
    let c_off = wid.z * m_size * n_size;
    let row0 = wid.y * 64u;
    let col0 = wid.x * 64u;
    let tx = lid % 16u;
    let ty = lid / 16u;

    var acc: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
        acc[i] = vec4<f32>(0.0);
    }

    // Batches summed into this output (1: one batch entry, wid.z).
    for (var zb = 0u; zb < nb; zb++) {
    let a_off = (wid.z + zb) * pu(3u);
    let b_off = (wid.z + zb) * pu(4u);
    for (var k0 = 0u; k0 < k_size; k0 += 16u) {
        for (var r = 0u; r < 4u; r++) {
            let e = lid + 256u * r;
            // A tile element (m, k).
            var am: u32;
            var ak: u32;
            if (TRANS_A) {
                am = e % 64u;
                ak = e / 64u;
            } else {
                am = e / 16u;
                ak = e % 16u;
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
            as_[ak * 64u + am] = av;
            // B tile element (k, n).
            var bk: u32;
            var bn: u32;
            if (TRANS_B) {
                bn = e / 16u;
                bk = e % 16u;
            } else {
                bn = e % 64u;
                bk = e / 64u;
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
            bs[bk * 64u + bn] = bv;
        }
        workgroupBarrier();
        for (var k = 0u; k < 16u; k++) {
            let ab = k * 64u + ty;
            let bb = k * 64u + tx;
            let bv = vec4<f32>(bs[bb], bs[bb + 16u], bs[bb + 32u], bs[bb + 48u]);
            acc[0] = fma(vec4<f32>(as_[ab]), bv, acc[0]);
            acc[1] = fma(vec4<f32>(as_[ab + 16u]), bv, acc[1]);
            acc[2] = fma(vec4<f32>(as_[ab + 32u]), bv, acc[2]);
            acc[3] = fma(vec4<f32>(as_[ab + 48u]), bv, acc[3]);
        }
        workgroupBarrier();
    }
    }

    for (var i = 0u; i < 4u; i++) {
        let row = row0 + ty + 16u * i;
        if (row >= m_size) {
            continue;
        }
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + tx + 16u * j;
            if (col < n_size) {
                c[c_off + row * n_size + col] = acc[i][j];
            }
        }
    }
}
