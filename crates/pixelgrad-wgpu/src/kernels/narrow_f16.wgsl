// NarrowF16 (Op::NarrowF16): f32 to f16 storage, two elements per u32 word (element 2w in the
// low 16 bits of word w, 2w + 1 in the high; a last odd element leaves the high half zero).
// One invocation per word. Rounding to nearest, ties to even, with integer operations only,
// so every device gives the same bits: past the f16 range ±inf, below it f16 subnormals and
// ±0 (f32 subnormals become ±0), NaN a quiet NaN keeping the payload's top bits.
// pack2x16float is not used: WGSL leaves its result for out-of-range values indeterminate.
// params [n elements].
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// `v` rounded to nearest even after dropping its low `s` bits (1 <= s <= 24).
fn round_shift(v: u32, s: u32) -> u32 {
    let kept = v >> s;
    let rest = v & ((1u << s) - 1u);
    let half = 1u << (s - 1u);
    if (rest > half || (rest == half && (kept & 1u) == 1u)) {
        return kept + 1u;
    }
    return kept;
}

// The f16 bits (low 16) of the f32 whose bits are `f`.
fn half_of(f: u32) -> u32 {
    let sign = (f >> 16u) & 0x8000u;
    let e = (f >> 23u) & 0xffu;
    let m = f & 0x7fffffu;
    if (e == 0xffu) {
        if (m == 0u) {
            return sign | 0x7c00u;
        }
        return sign | 0x7e00u | (m >> 13u);
    }
    let ue = i32(e) - 127;
    if (ue > 15) {
        return sign | 0x7c00u;
    }
    if (ue >= -14) {
        // Normal: a carry out of the mantissa bumps the exponent, up to inf past 65504.
        return sign | ((u32(ue + 15) << 10u) + round_shift(m, 13u));
    }
    if (ue < -25) {
        return sign;
    }
    // Subnormal: the 24-bit significand in units of 2^-24 (the smallest f16 subnormal).
    return sign | round_shift(m | 0x800000u, u32(-(ue + 1)));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = flat_index(wid, nwg, lid);
    let n = pu(0u);
    if (w >= (n + 1u) / 2u) {
        return;
    }
    let lo = half_of(x[2u * w]);
    var hi = 0u;
    if (2u * w + 1u < n) {
        hi = half_of(x[2u * w + 1u]);
    }
    out[w] = lo | (hi << 16u);
}
