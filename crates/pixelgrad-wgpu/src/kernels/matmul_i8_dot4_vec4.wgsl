requires packed_4x8_integer_dot_product;
// matmul_i8_dot4.wgsl for N a multiple of 4: each vec4 of packed B holds four consecutive
// columns' words, so an invocation's 4x4 block takes five loads per four k (four A words, one
// B vec4) instead of eight. Same meaning, parameters and grid as matmul_i8_dot4.wgsl;
// b_batch_stride is in words (a multiple of 4).
override SIGNED: bool = true;
override ALIGNED: bool = true;

@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> bp: array<vec4<u32>>;
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
    let r = vec4<u32>(row0, min(row0 + 1u, last_row), min(row0 + 2u, last_row), min(row0 + 3u, last_row)) * k_size + a_off;
    let n4 = n_size / 4u;
    let bc = (b_off + col0) / 4u;
    var acc0 = vec4<i32>(0);
    var acc1 = vec4<i32>(0);
    var acc2 = vec4<i32>(0);
    var acc3 = vec4<i32>(0);
    var sums = vec4<i32>(0);
    for (var q = 0u; q < k4; q++) {
        let bw = bp[bc + q * n4];
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
        c[o + 1u] = v.y;
        c[o + 2u] = v.z;
        c[o + 3u] = v.w;
    }
}
