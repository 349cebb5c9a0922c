enable f16;

// matmul_f16.wgsl with f16 arithmetic (WGSL's f16, the `shader-f16` feature): tiles staged in
// workgroup memory as f16 (the f16 operand's halves unpacked exactly, the f32 operand rounded
// to f16), each product formed in f16 and accumulated in f32 (so the error is two f16
// roundings per product, not K of them). F16_B, TRANS_A, TRANS_B, params and grid as there.
override TRANS_A: bool = false;
override TRANS_B: bool = false;
override F16_B: bool = true;

@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

// The f32 bits of the IEEE half whose bits are the low 16 of `h` (widen.wgsl's conversion:
// integer operations, exact for subnormals too; unpack2x16float would need naga's
// SHADER_FLOAT16_IN_FLOAT32 capability).
fn pg_half_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        if (m == 0u) {
            return sign | 0x7f800000u;
        }
        // NaN: sign and payload kept, quiet (as the host's f16 -> f32 conversion does).
        return sign | 0x7fc00000u | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // Subnormal: m * 2^-24 with the leading one at bit p, a normal f32 of exponent p - 24.
        let p = firstLeadingBit(m);
        return sign | ((p + 103u) << 23u) | ((m << (23u - p)) & 0x7fffffu);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}

// Element i of A / B as f16, whichever is the f16 one (exact: widened bits, then f16), the other rounded.
fn load_a(i: u32) -> f16 {
    if (F16_B) {
        return f16(bitcast<f32>(a[i]));
    }
    return f16(bitcast<f32>(pg_half_bits(a[i >> 1u] >> ((i & 1u) * 16u))));
}
fn load_b(i: u32) -> f16 {
    if (F16_B) {
        return f16(bitcast<f32>(pg_half_bits(b[i >> 1u] >> ((i & 1u) * 16u))));
    }
    return f16(bitcast<f32>(b[i]));
}

// Tiles stored k-major: as_[k * 64 + m], bs[k * 64 + n].
var<workgroup> as_: array<f16, 1024>;
var<workgroup> bs: array<f16, 1024>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let m_size = pu(0u);
    let n_size = pu(1u);
    let k_size = pu(2u);
    let a_off = wid.z * pu(3u);
    let b_off = wid.z * pu(4u);
    let c_off = wid.z * m_size * n_size;
    let row0 = wid.y * 64u;
    let col0 = wid.x * 64u;
    let tx = lid % 16u;
    let ty = lid / 16u;

    var acc: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
        acc[i] = vec4<f32>(0.0);
    }

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
            var av = f16(0.0);
            if (gm < m_size && gk < k_size) {
                if (TRANS_A) {
                    av = load_a(a_off + gk * m_size + gm);
                } else {
                    av = load_a(a_off + gm * k_size + gk);
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
            var bv = f16(0.0);
            if (gn < n_size && gk2 < k_size) {
                if (TRANS_B) {
                    bv = load_b(b_off + gn * k_size + gk2);
                } else {
                    bv = load_b(b_off + gk2 * n_size + gn);
                }
            }
            bs[bk * 64u + bn] = bv;
        }
        workgroupBarrier();
        for (var k = 0u; k < 16u; k++) {
            let ab = k * 64u + ty;
            let bb = k * 64u + tx;
            let bv = vec4<f16>(bs[bb], bs[bb + 16u], bs[bb + 32u], bs[bb + 48u]);
            acc[0] += vec4<f32>(vec4<f16>(as_[ab]) * bv);
            acc[1] += vec4<f32>(vec4<f16>(as_[ab + 16u]) * bv);
            acc[2] += vec4<f32>(vec4<f16>(as_[ab + 32u]) * bv);
            acc[3] += vec4<f32>(vec4<f16>(as_[ab + 48u]) * bv);
        }
        workgroupBarrier();
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
