// Shared helpers for every pixelgrad fragment program. Tensors live in RGBA textures holding 4
// consecutive elements per texel, row-major over the texture (texel t at (t % width, t / width)).

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

// Output geometry: the texture width in texels and the number of valid elements.
uniform int u_out_w;
uniform int u_out_n;

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

// The window offsets lo..hi (of k) of a window starting at padded coordinate `start` whose
// input coordinate start + t - pad lies inside 0..size: at most min(k, size) of them, so
// window loops over them are bounded by the image however large the window or its padding.
ivec2 tap_range(int start, int k, int pad, int size) {
    int lo = clamp(pad - start, 0, k);
    return ivec2(lo, clamp(pad + size - start, lo, k));
}

// Precision emulation (WebGlOptions::emulate_precision, a test mode): with PG_HALF defined,
// PG_H(x) is x rounded to the nearest IEEE half (ties to even, 10 mantissa bits; half
// subnormals kept, smaller values to a signed zero; finite values past the half range
// saturate at +-65504; infinities and NaN unchanged), as a device computing in 16-bit mediump
// would hold it. The kernel programs wrap every value in PG_H and programs wrap their writes in
// PG_H4. Without PG_H they are the value itself.
#ifdef PG_HALF
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
highp vec4 pg_h4(highp vec4 v) {
    return vec4(pg_h(v.x), pg_h(v.y), pg_h(v.z), pg_h(v.w));
}
#define PG_H(x) pg_h(x)
#define PG_H4(v) pg_h4(v)
#else
#define PG_H(x) (x)
#define PG_H4(v) (v)
#endif
