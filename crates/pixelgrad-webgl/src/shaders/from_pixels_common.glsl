// Shared by from_pixels.glsl and from_pixels_rows.glsl (prepended to both): the source, the
// output geometry, the per-channel affine map and the filter. The filter is
// pixelgrad_core::image's (the same as pixelgrad-wgpu's kernels/from_pixels.wgsl): output
// pixel o of the content box samples c = (o + 0.5) * scale + offset - 0.5 with a triangle of
// half-width `support`, weights normalised, indices clamped to the edge. texelFetch of an
// RGBA8 texture gives v / 255.
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
// A filter wider than bilinear: each content column's horizontal sums per source row
// (from_pixels_rows.glsl CONFIG 0, texel y * u_xl + k for content column k).
uniform highp sampler2D u_rows;

float wt(int j, float c, float s) {
    return max(0.0, 1.0 - abs(float(j) - c) / s);
}

// Whether output pixel (ox, oy) lies in the content box (else it is padding).
bool in_content(int ox, int oy) {
    return ox >= u_xs && ox < u_xs + u_xl && oy >= u_ys && oy < u_ys + u_yl;
}

// Plain bilinear (both supports 1) at content pixel (ox, oy), every channel: each axis has
// the two taps floor(c) and floor(c) + 1, fetched without the general loops; their weights
// are wt()'s, summed and applied in the loops' order, so the result is the general path's.
vec4 bilinear(int ox, int oy) {
    float cx = (float(ox - u_xs) + 0.5) * u_xscale + u_xoff - 0.5;
    float cy = (float(oy - u_ys) + 0.5) * u_yscale + u_yoff - 0.5;
    int ix = int(floor(cx));
    int iy = int(floor(cy));
    // A tap of weight 0 (c on a pixel) adds nothing, as the loops skip it.
    float wa = wt(ix, cx, 1.0), wb = wt(ix + 1, cx, 1.0);
    float ha = wt(iy, cy, 1.0), hb = wt(iy + 1, cy, 1.0);
    int xa = clamp(ix, 0, u_src_w - 1), xb = clamp(ix + 1, 0, u_src_w - 1);
    int ya = clamp(iy, 0, u_src_h - 1), yb = clamp(iy + 1, 0, u_src_h - 1);
    vec4 top = wa * texelFetch(u_px, ivec2(xa, ya), 0) + wb * texelFetch(u_px, ivec2(xb, ya), 0);
    vec4 bottom = wa * texelFetch(u_px, ivec2(xa, yb), 0) + wb * texelFetch(u_px, ivec2(xb, yb), 0);
    return (ha * top + hb * bottom) / ((wa + wb) * (ha + hb));
}

// A wider filter (an antialiased shrink) at content pixel (ox, oy), every channel: the
// vertical taps over the rows' horizontal sums (u_rows), weights normalised; the general
// loops' arithmetic in their order, with each horizontal sum computed once per row.
vec4 filtered(int ox, int oy) {
    float cx = (float(ox - u_xs) + 0.5) * u_xscale + u_xoff - 0.5;
    float cy = (float(oy - u_ys) + 0.5) * u_yscale + u_yoff - 0.5;
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
    int rw = textureSize(u_rows, 0).x;
    for (int jy = y0; jy <= y1; jy++) {
        float wy = wt(jy, cy, u_ysup);
        if (wy <= 0.0) continue;
        wys += wy;
        int rt = clamp(jy, 0, u_src_h - 1) * u_xl + (ox - u_xs);
        v += wy * texelFetch(u_rows, ivec2(rt % rw, rt / rw), 0);
    }
    return v / (wxs * wys);
}
