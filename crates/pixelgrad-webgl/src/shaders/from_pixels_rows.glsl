// fromPixels' first pass when a filter is wider than bilinear (antialiased shrinks): the
// horizontal half of the filter for every source row. Texel t = y * u_xl + k holds, for
// content column k (output column u_xs + k) and source row y, the RGBA sum over the column's
// taps jx of wt(jx, cx, u_xsup) * pixel(clamp(jx), y), in the order from_pixels.glsl's loops
// add them (taps of weight 0 skipped). from_pixels.glsl's CONFIG 2 then weighs u_yl rows'
// sums per output element: the general path's arithmetic, with each horizontal sum computed
// once per (column, row) instead of once per output element and row.
#if CONFIG != 0
// CONFIG 1 (plain bilinear) and 2 (a wider filter, over u_rows: this program's CONFIG 0
// output), with 3 or 4 channels: texel t = oy * u_ow + ox holds output pixel (oy, ox)
// normalised, every channel at once (the pad value outside the content box), with
// from_pixels.glsl's CONFIG 1 / 2 arithmetic; its CONFIG 3 then lays the channels out. The
// taps and their weights are computed once per pixel instead of once per channel.
void main() {
    int t = out_base() >> 2;
    vec4 r = vec4(0.0);
    if (t < u_ow * u_oh) {
        int oy = t / u_ow;
        int ox = t - oy * u_ow;
        if (in_content(ox, oy)) {
#if CONFIG == 1
            vec4 v = bilinear(ox, oy);
#else
            vec4 v = filtered(ox, oy);
#endif
            r = v * vec4(u_mul0, u_mul1, u_mul2, u_mul3) + vec4(u_add0, u_add1, u_add2, u_add3);
        } else {
            r = vec4(u_pad0, u_pad1, u_pad2, u_pad3);
        }
    }
    o_color = r;
}
#else
void main() {
    int t = out_base() >> 2;
    vec4 acc = vec4(0.0);
    if (t < u_xl * u_src_h) {
        int k = t % u_xl;
        int y = t / u_xl;
        float cx = (float(k) + 0.5) * u_xscale + u_xoff - 0.5;
        int x0 = int(floor(cx - u_xsup)) + 1;
        int x1 = int(ceil(cx + u_xsup)) - 1;
        for (int jx = x0; jx <= x1; jx++) {
            float wx = wt(jx, cx, u_xsup);
            if (wx > 0.0) {
                acc += wx * texelFetch(u_px, ivec2(clamp(jx, 0, u_src_w - 1), y), 0);
            }
        }
    }
    o_color = acc;
}
#endif
