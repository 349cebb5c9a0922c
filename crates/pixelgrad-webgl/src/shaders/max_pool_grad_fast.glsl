// Op::MaxPoolGrad, hand-written for 2x2 windows at stride 2 without padding (CONFIG 1 and 2;
// the general program is rendered from pixelgrad_core::kernel::windows): x is u_x, dy u_b.
// Kept for a measured speed: over even rows a texel (two pixel pairs) at a time reads two
// texels of x and one value of dy per pair instead of recomputing each pixel's window, the
// cnn's first pool gradient 16-20 ms -> 2 ms on llvmpipe (commit a5da771).
#if CONFIG == 1 || CONFIG == 2
// One more tap of a window, in the general program's order and rule: (maximum, ties).
vec2 tap(vec2 mt, float v) {
    return v > mt.x ? vec2(v, 1.0) : (v == mt.x ? vec2(mt.x, mt.y + 1.0) : mt);
}

// Element i of x as (image plane, row, column).
ivec3 pixel_of(int i) {
    int hw = u_h * u_w;
    int plane = i / hw;
    int q = i - plane * hw;
    int y = q / u_w;
    return ivec3(plane, y, q - y * u_w);
}
#endif

#if CONFIG == 2
// 2x2 windows, stride 2, no padding, any W and H (window.rs checks): each pixel lies in at
// most one window (an odd last row or column in none), whose four taps are read directly.
// The general path's sum over that one window is 0 + dy / ties, the same value.
float compute(int i) {
    ivec3 p = pixel_of(i);
    int hw = u_h * u_w;
    int plane = p.x;
    int y = p.y;
    int x = p.z;
    int oy = y >> 1;
    int ox = x >> 1;
    if (oy >= u_oh || ox >= u_ow) return 0.0;
    int tl = plane * hw + 2 * oy * u_w + 2 * ox;
    float a = fetch(u_x, tl);
    float b = fetch(u_x, tl + 1);
    float c = fetch(u_x, tl + u_w);
    float d = fetch(u_x, tl + u_w + 1);
    vec2 m = tap(tap(tap(vec2(a, 1.0), b), c), d);
    float v = (y & 1) == 0 ? ((x & 1) == 0 ? a : b) : ((x & 1) == 0 ? c : d);
    return v == m.x ? fetch(u_b, (plane * u_oh + oy) * u_ow + ox) / m.y : 0.0;
}
#endif
#if CONFIG == 1
// 2x2 windows, stride 2, no padding, W even (window.rs checks): a texel is two pairs of
// neighbouring pixels of one row, each pair covered by one window, whose taps are two pairs
// of x that each lie in one texel: 2 texel reads of x and 1 read of dy per pair.
#define PG_COMPUTE4

// The gradient of pixels i and i + 1 (i even: one pair of one window's row).
vec2 pair_grad(int i) {
    ivec3 p = pixel_of(i);
    int hw = u_h * u_w;
    int plane = p.x;
    int y = p.y;
    int x = p.z;
    int oy = y >> 1;
    if (oy >= u_oh) return vec2(0.0);
    int row = plane * hw + 2 * oy * u_w + x;
    vec4 ta = fetch4(u_x, row >> 2);
    vec4 tb = fetch4(u_x, (row + u_w) >> 2);
    vec2 a = (row & 2) == 0 ? ta.xy : ta.zw;
    vec2 b = ((row + u_w) & 2) == 0 ? tb.xy : tb.zw;
    vec2 m = tap(tap(tap(vec2(a.x, 1.0), a.y), b.x), b.y);
    vec2 v = (y & 1) == 0 ? a : b;
    float d = fetch(u_b, (plane * u_oh + oy) * u_ow + (x >> 1)) / m.y;
    return vec2(v.x == m.x ? d : 0.0, v.y == m.x ? d : 0.0);
}

vec4 compute4(int base) {
    return vec4(pair_grad(base), pair_grad(base + 2));
}
#endif
