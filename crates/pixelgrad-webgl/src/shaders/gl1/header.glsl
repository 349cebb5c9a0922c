// Shared helpers for every GLSL ES 1.00 (WebGL1) program. Tensors live in RGBA float textures
// holding 4 consecutive elements per texel, row-major over the texture, as in the GLSL ES 3.00
// programs; only the arithmetic differs. GLSL ES 1.00 has no texelFetch, no textureSize, no
// integer `%` or bitwise operators and only guarantees 16-bit ints, so every index is a float
// holding a whole number and every texture is read with texture2D at the texel centre
// (x + 0.5) / width, (y + 0.5) / height (NEAREST, CLAMP_TO_EDGE: the centre selects exactly
// that texel). Each sampler u_NAME comes with a uniform vec2 u_NAME_size (its size in texels).
//
// Exactness: the backend keeps every tensor below 2^22 elements, so every index, stride
// product and intermediate below is a whole number under 2^24, where f32 represents every
// integer exactly: +, - and * of them are exact. Only division rounds; pg_divmod corrects it.

// Output geometry: the texture width in texels and the number of valid elements.
uniform float u_out_w;
uniform float u_out_n;

// Exactly 1.0 (set by the launcher). GLSL ES 1.00 declares gl_FragColor mediump, and a
// compiler may carry that precision back into the computation: Mesa samples the textures
// feeding it at 16 bits. Multiplying by a highp uniform (exact: x * 1.0 == x for every x,
// -0, infinities and NaN included) keeps everything before it highp; the target is RGBA32F,
// so the value is stored as computed.
uniform float u_one;
// Exactly 0.0 (set by the launcher), a zero the compiler cannot see: NaN and the infinities of
// the kernels' special constants are computed from it at run time, never folded, and the NaN
// test below multiplies by it.
uniform float u_zero;
// The largest finite f32 (set by the launcher): a literal for it may be printed back by a
// shader translator with too few digits and read as infinity (ANGLE's WebGL1 path did).
uniform float u_fmax;

vec4 pg_out(vec4 v) {
    return v * u_one;
}

// (floor(a / b), a - b * floor(a / b)) for whole numbers 0 <= a < 2^22, 0 < b < 2^22. The
// device's a / b may be off by a few ulp (2.5 in GLSL ES 3.00; ES 1.00 leaves it to the
// driver); below 2^22 that moves floor(a / b) by at most one, and the remainder, computed
// exactly, says which way: one correction step each way makes the result exact.
vec2 pg_divmod(float a, float b) {
    float q = floor(a / b);
    float r = a - q * b;
    if (r < 0.0) {
        q -= 1.0;
        r += b;
    }
    if (r >= b) {
        q += 1.0;
        r -= b;
    }
    return vec2(q, r);
}

// Texel t of a texture of `size` texels, read at its centre.
vec4 fetch4(highp sampler2D s, vec2 size, float t) {
    vec2 yx = pg_divmod(t, size.x);
    return texture2D(s, (vec2(yx.y, yx.x) + 0.5) / size);
}

// Element i of a tensor stored in sampler s (4 per texel). i * 0.25 is exact (a power of two).
float fetch(highp sampler2D s, vec2 size, float i) {
    float t = floor(i * 0.25);
    float k = i - 4.0 * t;
    vec4 v = fetch4(s, size, t);
    return k == 0.0 ? v.x : (k == 1.0 ? v.y : (k == 2.0 ? v.z : v.w));
}

// Flat index of the first of the 4 elements this fragment writes (gl_FragCoord is the pixel
// centre, x + 0.5). GLSL ES 1.00 declares gl_FragCoord mediump: even at 16 bits the centres are
// exact up to 1023.5, and 1024.5 rounds to 1024 (to even), still the right floor; tensors below
// 2^22 elements are laid out at most 1025 texels on a side, so no larger centre occurs.
float out_base() {
    return 4.0 * (floor(gl_FragCoord.y) * u_out_w + floor(gl_FragCoord.x));
}

// NaN test without bit access (GLSL ES 1.00 has no floatBitsToUint): x * 0 is 0 for every
// finite x and NaN for NaN and the infinities; the zero is a uniform, so the product cannot be
// folded away (a comparison-only test can be: Mesa folds "neither below, above nor equal to 0").
bool pg_isnan(float x) {
    return !(x * u_zero == 0.0) && !(abs(x) > u_fmax);
}

// Infinity test: beyond the largest finite f32.
bool pg_isinf(float x) {
    return abs(x) > u_fmax;
}

// Sign bit: below zero, or -0 (whose reciprocal is -inf).
bool pg_signbit(float x) {
    return x < 0.0 || (x == 0.0 && 1.0 / x < 0.0);
}

// The window offsets lo..hi (of k) of a window starting at padded coordinate `start` whose
// input coordinate start + t - pad lies inside 0..size (as shaders/header.glsl's): at most
// min(k, size) of them, so the window loops' constant bound MAX_WINDOW need only exceed the
// image's side, not the window's (ops/window.rs checks).
vec2 tap_range(float start, float k, float pad, float size) {
    float lo = clamp(pad - start, 0.0, k);
    return vec2(lo, clamp(pad + size - start, lo, k));
}

// Precision emulation (WebGlOptions::emulate_precision, a test mode): with PG_HALF defined,
// PG_H(x) is x rounded to the nearest IEEE half exactly as shaders/header.glsl rounds it, by
// arithmetic (GLSL ES 1.00 has no bit casts): the exponent from log2, corrected both ways
// since log2 is approximate, then the value in whole steps of its half ulp, rounded to even.
#ifdef PG_HALF
highp float pg_h(highp float x) {
    highp float a = abs(x);
    // Infinities and NaN (every comparison with NaN is false) unchanged.
    if (!(a <= 3.4028235e38)) return x;
    // At most 2^-25 (half of the smallest half subnormal, a tie to the even 0): a signed zero
    // (times the uniform zero: the compiler folds `x * 0.0` to +0).
    if (a <= 2.9802322e-8) return x * u_zero;
    if (a >= 65504.0) return x < 0.0 ? -65504.0 : 65504.0;
    highp float e = floor(log2(a));
    if (exp2(e) > a) e -= 1.0;
    if (exp2(e + 1.0) <= a) e += 1.0;
    e = max(e, -14.0);
    // a in steps of its half ulp 2^(e - 10): below 2^11, exact in f32.
    highp float r = a * exp2(10.0 - e);
    highp float f = floor(r);
    highp float d = r - f;
    if (d > 0.5 || (d == 0.5 && f - 2.0 * floor(f * 0.5) == 1.0)) f += 1.0;
    r = min(f * exp2(e - 10.0), 65504.0);
    return x < 0.0 ? -r : r;
}
highp vec4 pg_h4(highp vec4 v) {
    return vec4(pg_h(v.x), pg_h(v.y), pg_h(v.z), pg_h(v.w));
}
#define PG_H(x) pg_h(x)
#define PG_H4(v) pg_h4(v)
#else
#define PG_H(x) (x)
#define PG_H4(v) (v)
#endif
