// Op::Widen: narrow storage to f32, exactly. CONFIG 0: i8, 1: u8, 2: f16 (GLSL ES 3.00 only).
#ifdef PG_ES300
// Integer textures: i8 in RGBA8I, u8 in RGBA8UI, f16 bit patterns in RGBA16UI, decoded with
// integer operations so subnormals, signed zeros, infinities and NaNs come out exact on every
// driver (no sampler conversion), bit for bit as the host's f16 -> f32 conversion (NaNs keep
// sign and payload and are made quiet).
#if CONFIG == 0
uniform highp isampler2D u_x;
#else
uniform highp usampler2D u_x;
#endif

#if CONFIG == 2
// The f32 with the same value as half bit pattern h.
float half_to_float(uint h) {
    uint s = (h & 0x8000u) << 16;
    uint e = (h >> 10) & 0x1fu;
    uint m = h & 0x3ffu;
    // Infinity, and NaN: its payload moves to the top of the f32 mantissa, quiet bit set.
    if (e == 0x1fu) return uintBitsToFloat(s | (m == 0u ? 0x7f800000u : 0x7fc00000u) | (m << 13));
    if (e != 0u) return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
    // Zero or subnormal: m * 2^-24, a normal f32 (or 0) computed exactly; the sign as a bit.
    return uintBitsToFloat(floatBitsToUint(float(m) * 5.9604644775390625e-8) | s);
}
#endif

float compute(int i) {
    int t = i >> 2;
    int w = textureSize(u_x, 0).x;
    ivec2 p = ivec2(t % w, t / w);
    int k = i & 3;
#if CONFIG == 0
    ivec4 v = texelFetch(u_x, p, 0);
    return float(k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w)));
#else
    uvec4 v = texelFetch(u_x, p, 0);
    uint b = k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w));
#if CONFIG == 1
    return float(b);
#else
    return half_to_float(b);
#endif
#endif
}
#else
// GLSL ES 1.00 has no integer textures: 8-bit storage is a byte texture (RGBA /
// UNSIGNED_BYTE, 4 elements per texel as every tensor), each channel sampled as byte / 255.
// byte / 255 * 255 lies far closer than 0.5 to the byte on any sampler, so rounding to the
// nearest whole number gives it back exactly; i8 is the two's-complement byte.
SAMPLER(u_x, u_x_size);

float compute(INDEX i) {
    float b = floor(FETCH(u_x, u_x_size, i) * 255.0 + 0.5);
#if CONFIG == 0
    if (b >= 128.0) b -= 256.0;
#endif
    return b;
}
#endif
