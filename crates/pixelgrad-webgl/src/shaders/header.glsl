// Shared helpers for every pixelgrad fragment program. Tensors live in RGBA textures holding 4
// consecutive elements per texel, row-major over the texture (texel t at (t % width, t / width)).

// Location 0 explicitly: matmul_block.glsl adds outputs 1..3 (multiple render targets).
layout(location = 0) out vec4 o_color;

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

// sin and cos accurate to about 1e-7 absolute for |x| up to ~1e4: GLSL ES promises nothing about
// the built-ins, and SwiftShader's (Chromium without a GPU) miss the conformance tolerance.
// Cody-Waite reduction by pi/2 with the constant in three parts (the first has 8 significant
// bits, so k * 1.5703125 is exact), then Taylor polynomials on [-pi/4, pi/4]. Returns (sin, cos).
vec2 sincos(float x) {
    float k = floor(x * 0.63661977236758134 + 0.5);
    float r = x - k * 1.5703125;
    r = r - k * 4.837512969970703125e-4;
    r = r - k * 7.54978995489188216e-8;
    float r2 = r * r;
    float s = r * (1.0 + r2 * (-0.16666667 + r2 * (8.3333333e-3 + r2 * (-1.9841270e-4 + r2 * 2.7557319e-6))));
    float c = 1.0 + r2 * (-0.5 + r2 * (4.1666668e-2 + r2 * (-1.3888889e-3 + r2 * (2.4801587e-5 - r2 * 2.7557319e-7))));
    // x = k * pi/2 + r; the quadrant is k mod 4 (two's complement makes -1 & 3 == 3).
    int q = int(k) & 3;
    return q == 0 ? vec2(s, c) : (q == 1 ? vec2(c, -s) : (q == 2 ? vec2(-s, -c) : vec2(-c, s)));
}
