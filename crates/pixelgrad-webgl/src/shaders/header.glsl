// Shared helpers for every pixelgrad fragment program, in both GLSL versions: GLSL ES 3.00
// (WebGL2, PG_ES300 defined) and GLSL ES 1.00 (the webgl1 mode, PG_ES100). The spellings that
// differ (INDEX, IX, PG_DIV, PG_MOD, SAMPLER, FETCH, PG_ISNAN, PG_WRITE, PG_FOR, ...) are
// defined before this file from one table (glsl.rs, GlslVersion::table); the helpers that read
// textures differ in algorithm and are in the two sections below.
//
// Tensors live in RGBA textures holding 4 consecutive elements per texel, row-major over the
// texture (texel t at (t % width, t / width)).

// Output geometry: the texture width in texels and the number of valid elements.
uniform INDEX u_out_w;
uniform INDEX u_out_n;

#ifdef PG_ES300
// Location 0 explicitly: matmul_block.glsl adds outputs 1..3 (multiple render targets).
// Programs drawing into an integer texture write unsigned texels (RGBA16UI: narrow_f16.glsl;
// RGBA8UI: narrow8.glsl) or signed ones (RGBA8I: narrow8.glsl).
#ifdef PG_OUT_UINT
layout(location = 0) out highp uvec4 o_color;
#elif defined(PG_OUT_INT)
layout(location = 0) out highp ivec4 o_color;
#else
layout(location = 0) out vec4 o_color;
#endif

// Element i of a tensor stored in sampler s (4 per texel). Reads with texelFetch (integer
// coordinates, no filtering), so NEAREST/CLAMP settings can never blend neighbours.
float fetch(highp sampler2D s, int i) {
    int t = i >> 2;
    int w = textureSize(s, 0).x;
    vec4 v = texelFetch(s, ivec2(t % w, t / w), 0);
    int k = i & 3;
    // Explicit selection instead of dynamic vector indexing, which some drivers mishandle.
    return k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w));
}

// The whole texel t of a tensor (elements 4t .. 4t+3).
vec4 fetch4(highp sampler2D s, int t) {
    int w = textureSize(s, 0).x;
    return texelFetch(s, ivec2(t % w, t / w), 0);
}

// Flat index of the first of the 4 elements this fragment writes.
int out_base() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    return 4 * (p.y * u_out_w + p.x);
}

// Texel t of a texture w texels wide, as coordinates.
ivec2 texel_at(int t, int w) {
    int y = t / w;
    return ivec2(t - y * w, y);
}

// A step of s texels in a texture w texels wide, as (dx, dy) with dx < w.
ivec2 step_of(int s, int w) {
    int dy = s / w;
    return ivec2(s - dy * w, dy);
}

// p moved forward by the step d (from step_of), wrapping into the next texture row: texel
// streams advanced without division.
ivec2 advance(ivec2 p, ivec2 d, int w) {
    p += d;
    return p.x >= w ? ivec2(p.x - w, p.y + 1) : p;
}
#else
// GLSL ES 1.00 has no texelFetch, no textureSize, no integer `%` or bitwise operators and
// only guarantees 16-bit ints, so every index is a float holding a whole number and every
// texture is read with texture2D at the texel centre (x + 0.5) / width, (y + 0.5) / height
// (NEAREST, CLAMP_TO_EDGE: the centre selects exactly that texel). Each sampler u_NAME comes
// with a uniform vec2 u_NAME_size (its size in texels; SAMPLER declares both).
//
// Exactness: the backend keeps every tensor below 2^22 elements, so every index, stride
// product and intermediate is a whole number under 2^24, where f32 represents every integer
// exactly: +, - and * of them are exact. Only division rounds; pg_divmod corrects it.

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
#endif

// The window offsets lo..hi (of k) of a window starting at padded coordinate `start` whose
// input coordinate start + t - pad lies inside 0..size: at most min(k, size) of them, so
// window loops over them are bounded by the image however large the window or its padding
// (the webgl1 mode's constant bound MAX_WINDOW need only exceed the image's side; ops/window.rs
// checks).
IVEC2 tap_range(INDEX start, INDEX k, INDEX pad, INDEX size) {
    INDEX lo = clamp(pad - start, IX(0), k);
    return IVEC2(lo, clamp(pad + size - start, lo, k));
}

// Precision emulation (WebGlOptions::emulate_precision, a test mode): with PG_HALF defined,
// PG_H(x) is x rounded to the nearest IEEE half (ties to even, 10 mantissa bits; half
// subnormals kept, smaller values to a signed zero; finite values past the half range
// saturate at +-65504; infinities and NaN unchanged), as a device computing in 16-bit mediump
// would hold it. The kernel programs wrap every value in PG_H and programs wrap their writes in
// PG_H4. Without PG_H they are the value itself.
#ifdef PG_HALF
#ifdef PG_ES300
highp float pg_h(highp float x) {
    highp uint u = floatBitsToUint(x);
    highp uint a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return x;
    highp float r;
    if (a < 0x38800000u) {
        // Below 2^-14: half subnormals, whole steps of 2^-24 (scaling by 2^24 is exact).
        r = roundEven(uintBitsToFloat(a) * 16777216.0) * 5.9604645e-8;
    } else {
        // Keep 10 of the 23 mantissa bits, to nearest, ties to even (a carry moves the exponent).
        r = uintBitsToFloat((a + 0x0fffu + ((a >> 13u) & 1u)) & 0xffffe000u);
    }
    r = min(r, 65504.0);
    return (u >> 31u) != 0u ? -r : r;
}
#else
// The same rounding by arithmetic (GLSL ES 1.00 has no bit casts): the exponent from log2,
// corrected both ways since log2 is approximate, then the value in whole steps of its half
// ulp, rounded to even.
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
#endif
highp vec4 pg_h4(highp vec4 v) {
    return vec4(pg_h(v.x), pg_h(v.y), pg_h(v.z), pg_h(v.w));
}
#define PG_H(x) pg_h(x)
#define PG_H4(v) pg_h4(v)
#else
#define PG_H(x) (x)
#define PG_H4(v) (v)
#endif
