// From pixels: an RGBA8 texture (the source, row 0 at the top, as texImage2D from a DOM source
// or tex_sub_image_2d from bytes puts it) resampled, normalised and laid out into a model
// input, one element per compute(i); the filter and the uniforms are from_pixels_common.glsl's.
// CONFIG 0: an empty content box (all padding). CONFIG 1: both supports are 1 (plain
// bilinear: no antialiasing): bilinear().
// CONFIG 2: the rows' horizontal sums come from from_pixels_rows.glsl (u_rows, texel
// y * u_xl + k for content column k); each element weighs the rows of its vertical taps.
// CONFIG 3: 3 or 4 channels, every channel of a pixel computed at once by
// from_pixels_rows.glsl's CONFIG 1 or 2 (u_rows, texel oy * u_ow + ox); each element picks its
// own.
float pick(vec4 v, int c) {
    return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w));
}

#if CONFIG == 3
// The channels of from_pixels_rows.glsl's CONFIG 1 or 2 (u_rows, one texel per output pixel)
// laid out: one fetch per element.
float compute(int i) {
    int c, p;
    if (u_nhwc == 1) {
        c = i % u_ch;
        p = i / u_ch;
    } else {
        int plane = u_ow * u_oh;
        c = i / plane;
        p = i - c * plane;
    }
    return pick(texelFetch(u_rows, texel_at(p, textureSize(u_rows, 0).x), 0), c);
}
#else
float compute(int i) {
    int c, ox, oy;
    if (u_nhwc == 1) {
        c = i % u_ch;
        int p = i / u_ch;
        ox = p % u_ow;
        oy = p / u_ow;
    } else {
        ox = i % u_ow;
        int r = i / u_ow;
        oy = r % u_oh;
        c = r / u_oh;
    }
    vec4 mul = vec4(u_mul0, u_mul1, u_mul2, u_mul3);
    vec4 add = vec4(u_add0, u_add1, u_add2, u_add3);
    vec4 pad = vec4(u_pad0, u_pad1, u_pad2, u_pad3);
    if (!in_content(ox, oy)) {
        return pick(pad, c);
    }
#if CONFIG == 1
    vec4 v = bilinear(ox, oy);
#elif CONFIG == 2
    vec4 v = filtered(ox, oy);
#else
    // CONFIG 0: no content column (an empty content box), so every element is padding and
    // returned above.
    vec4 v = vec4(0.0);
#endif
    if (u_ch == 1) {
        return dot(v.xyz, vec3(0.299, 0.587, 0.114)) * u_mul0 + u_add0;
    }
    return pick(v, c) * pick(mul, c) + pick(add, c);
}
#endif
