// Op::NarrowF16: f32 to f16 storage, drawn into an RGBA16UI texture holding the IEEE half bit
// patterns, 4 elements per texel in the f32 layout (elements past u_out_n are 0, as uploads
// pad). Rounding to nearest, ties to even, with integer operations on the f32's bits only, so
// every driver gives the same bits as the host's f32 -> f16 conversion: past the f16 range
// ±inf, below it f16 subnormals and ±0 (f32 subnormals become ±0), NaN a quiet NaN keeping the
// payload's top bits. The input's bits are taken straight from texelFetch of the highp
// sampler (never through a function returning `float`, which the mediump mode would narrow).
uniform highp sampler2D u_x;

// `v` rounded to nearest even after dropping its low `s` bits (1 <= s <= 24).
highp uint round_shift(highp uint v, highp uint s) {
    highp uint kept = v >> s;
    highp uint rest = v & ((1u << s) - 1u);
    highp uint mid = 1u << (s - 1u);
    if (rest > mid || (rest == mid && (kept & 1u) == 1u)) return kept + 1u;
    return kept;
}

// The f16 bits (low 16) of the f32 whose bits are `f`.
highp uint half_of(highp uint f) {
    highp uint sign = (f >> 16) & 0x8000u;
    highp uint e = (f >> 23) & 0xffu;
    highp uint m = f & 0x7fffffu;
    if (e == 0xffu) {
        if (m == 0u) return sign | 0x7c00u;
        return sign | 0x7e00u | (m >> 13);
    }
    highp int ue = int(e) - 127;
    if (ue > 15) return sign | 0x7c00u;
    // Normal: a carry out of the mantissa bumps the exponent, up to inf past 65504.
    if (ue >= -14) return sign | ((uint(ue + 15) << 10) + round_shift(m, 13u));
    if (ue < -25) return sign;
    // Subnormal: the 24-bit significand in units of 2^-24 (the smallest f16 subnormal).
    return sign | round_shift(m | 0x800000u, uint(-(ue + 1)));
}

void main() {
    int base = out_base();
    highp uvec4 r = uvec4(0u);
    if (base < u_out_n) {
        int t = base >> 2;
        int w = textureSize(u_x, 0).x;
        highp uvec4 b = floatBitsToUint(texelFetch(u_x, ivec2(t % w, t / w), 0));
        r.x = half_of(b.x);
        if (base + 1 < u_out_n) r.y = half_of(b.y);
        if (base + 2 < u_out_n) r.z = half_of(b.z);
        if (base + 3 < u_out_n) r.w = half_of(b.w);
    }
    o_color = r;
}
