requires packed_4x8_integer_dot_product;
// Exact integer matmul of 8-bit weights on packed 8-bit dot products (Op::MatMulI8 with
// b_i8): C[g] = A[g] * B[g], A packed four elements per u32 word (element e in byte e % 4 of
// word e / 4), B packed by matmul_i8_pack_b.wgsl (word (g, q, n): b[g, 4q..4q+4, n], zero
// bytes past K). dot4I8Packed multiplies four byte pairs and sums them in i32, exactly;
// sums of those are i32 (wrapping), and C = f32(sum), rounded to nearest: what
// matmul_i8.wgsl computes. u8 weights (SIGNED false) have no i8 x i8 product: each byte
// flips its top bit (w ^ 0x80 is the i8 w - 128), and 128 * Σ_k b[k, n] (a dot4I8Packed
// with 0x01010101) adds the 128 back. When K is not a multiple of 4 (ALIGNED false) a row
// starts inside a word: its four k are funnel-shifted out of two words, and the bytes past
// the row's end (the next row's) meet B's zero bytes.
// Each invocation computes a 4x4 block of C, an 8x8 workgroup a 32x32 tile; edge blocks
// re-read the last row / column and store only what is inside C. No workgroup memory.
// params [M, N, K, a_batch_stride (elements), b_batch_stride (words), K4 = ceil(K / 4)];
// a batch stride 0 broadcasts. Grid (ceil(N/32), ceil(M/32), batch).
override SIGNED: bool = true;
override ALIGNED: bool = true;

@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> bp: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// Elements e .. e + 3 of A as one word (byte j: element e + j).
fn a_word(e: u32) -> u32 {
    var w: u32;
    if (ALIGNED) {
        w = a[e >> 2u];
    } else {
        let i = e >> 2u;
        let sh = (e & 3u) * 8u;
        let lo = a[i];
        if (sh == 0u) {
            w = lo;
        } else {
            let hi = a[min(i + 1u, arrayLength(&a) - 1u)];
            w = (lo >> sh) | (hi << (32u - sh));
        }
    }
    if (SIGNED) {
        return w;
    }
    return w ^ 0x80808080u;
}

fn dot_row(w: u32, bw: vec4<u32>) -> vec4<i32> {
    return vec4<i32>(dot4I8Packed(w, bw.x), dot4I8Packed(w, bw.y), dot4I8Packed(w, bw.z), dot4I8Packed(w, bw.w));
}

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let m_size = pu(0u);
    let n_size = pu(1u);
    let k_size = pu(2u);
    let a_off = wid.z * pu(3u);
    let b_off = wid.z * pu(4u);
    let k4 = pu(5u);
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
    var sums = vec4<i32>(0);
    for (var q = 0u; q < k4; q++) {
        let bq = q * n_size;
        let bw = vec4<u32>(bp[cc.x + bq], bp[cc.y + bq], bp[cc.z + bq], bp[cc.w + bq]);
        let e = q * 4u;
        acc0 += dot_row(a_word(r.x + e), bw);
        acc1 += dot_row(a_word(r.y + e), bw);
        acc2 += dot_row(a_word(r.z + e), bw);
        acc3 += dot_row(a_word(r.w + e), bw);
        if (!SIGNED) {
            sums += dot_row(0x01010101u, bw);
        }
    }
    if (!SIGNED) {
        let fix = sums * 128;
        acc0 += fix;
        acc1 += fix;
        acc2 += fix;
        acc3 += fix;
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
