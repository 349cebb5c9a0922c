// From pixels: an RGBA8 texture (the source, row 0 at the top, as texImage2D from a DOM source
// or tex_sub_image_2d from bytes puts it) resampled, normalised and laid out into a model
// input, one element per compute(i). The filter is pixelgrad_core::image's (the same as
// pixelgrad-wgpu's kernels/from_pixels.wgsl): output pixel o of the content box samples
// c = (o + 0.5) * scale + offset - 0.5 with a triangle of half-width `support`, weights
// normalised, indices clamped to the edge. texelFetch of an RGBA8 texture gives v / 255.
// CONFIG 1: both supports are 1 (plain bilinear: no antialiasing), so each axis has the two
// taps floor(c) and floor(c) + 1, fetched without the loops; their weights are wt()'s, summed
// and applied in the loops' order, so the result is the general path's.
// CONFIG 2: the rows' horizontal sums come from from_pixels_rows.glsl (u_rows, texel
// y * u_xl + k for content column k); each element weighs the rows of its vertical taps.
// CONFIG 3: plain bilinear with 3 or 4 channels, every channel of a pixel computed at once by
// from_pixels_rows.glsl's CONFIG 1 (u_rows, texel oy * u_ow + ox); each element picks its own.
uniform highp sampler2D u_px;
// source size; output size; channels; layout (0 nchw, 1 nhwc); content box per axis.
uniform int u_src_w;
uniform int u_src_h;
uniform int u_ow;
uniform int u_oh;
uniform int u_ch;
uniform int u_nhwc;
uniform int u_xs;
uniform int u_xl;
uniform int u_ys;
uniform int u_yl;
// per axis: scale, offset, support.
uniform float u_xscale;
uniform float u_xoff;
uniform float u_xsup;
uniform float u_yscale;
uniform float u_yoff;
uniform float u_ysup;
// per channel: value = pixel * mul + add; padding value (already normalised).
uniform float u_mul0, u_mul1, u_mul2, u_mul3;
uniform float u_add0, u_add1, u_add2, u_add3;
uniform float u_pad0, u_pad1, u_pad2, u_pad3;
#if CONFIG == 2 || CONFIG == 3
uniform highp sampler2D u_rows;
#endif

float wt(int j, float c, float s) {
    return max(0.0, 1.0 - abs(float(j) - c) / s);
}

float pick(vec4 v, int c) {
    return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w));
}

#if CONFIG == 3
// The channels of from_pixels_rows.glsl's CONFIG 1 (u_rows, one texel per output pixel)
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
    bool inside = ox >= u_xs && ox < u_xs + u_xl && oy >= u_ys && oy < u_ys + u_yl;
    if (!inside) {
        return pick(pad, c);
    }
    float cx = (float(ox - u_xs) + 0.5) * u_xscale + u_xoff - 0.5;
    float cy = (float(oy - u_ys) + 0.5) * u_yscale + u_yoff - 0.5;
#if CONFIG == 1
    int ix = int(floor(cx));
    int iy = int(floor(cy));
    // A tap of weight 0 (c on a pixel) adds nothing, as the loops skip it.
    float wa = wt(ix, cx, 1.0), wb = wt(ix + 1, cx, 1.0);
    float ha = wt(iy, cy, 1.0), hb = wt(iy + 1, cy, 1.0);
    int xa = clamp(ix, 0, u_src_w - 1), xb = clamp(ix + 1, 0, u_src_w - 1);
    int ya = clamp(iy, 0, u_src_h - 1), yb = clamp(iy + 1, 0, u_src_h - 1);
    vec4 top = wa * texelFetch(u_px, ivec2(xa, ya), 0) + wb * texelFetch(u_px, ivec2(xb, ya), 0);
    vec4 bottom = wa * texelFetch(u_px, ivec2(xa, yb), 0) + wb * texelFetch(u_px, ivec2(xb, yb), 0);
    vec4 v = (ha * top + hb * bottom) / ((wa + wb) * (ha + hb));
#else
    int x0 = int(floor(cx - u_xsup)) + 1;
    int x1 = int(ceil(cx + u_xsup)) - 1;
    int y0 = int(floor(cy - u_ysup)) + 1;
    int y1 = int(ceil(cy + u_ysup)) - 1;
    float wxs = 0.0;
    for (int jx = x0; jx <= x1; jx++) {
        wxs += wt(jx, cx, u_xsup);
    }
    float wys = 0.0;
    vec4 v = vec4(0.0);
#if CONFIG == 2
    int rw = textureSize(u_rows, 0).x;
#endif
    for (int jy = y0; jy <= y1; jy++) {
        float wy = wt(jy, cy, u_ysup);
        if (wy <= 0.0) continue;
        wys += wy;
        int row = clamp(jy, 0, u_src_h - 1);
#if CONFIG == 2
        int rt = row * u_xl + (ox - u_xs);
        vec4 acc = texelFetch(u_rows, ivec2(rt % rw, rt / rw), 0);
#else
        vec4 acc = vec4(0.0);
        for (int jx = x0; jx <= x1; jx++) {
            float wx = wt(jx, cx, u_xsup);
            if (wx > 0.0) {
                acc += wx * texelFetch(u_px, ivec2(clamp(jx, 0, u_src_w - 1), row), 0);
            }
        }
#endif
        v += wy * acc;
    }
    v /= wxs * wys;
#endif
    if (u_ch == 1) {
        return dot(v.xyz, vec3(0.299, 0.587, 0.114)) * u_mul0 + u_add0;
    }
    return pick(v, c) * pick(mul, c) + pick(add, c);
}
#endif
