// fromPixels' first pass when a filter is wider than bilinear (antialiased shrinks): the
// horizontal half of the filter for every source row. Texel t = y * u_xl + k holds, for
// content column k (output column u_xs + k) and source row y, the RGBA sum over the column's
// taps jx of wt(jx, cx, u_xsup) * pixel(clamp(jx), y), in the order from_pixels.glsl's loops
// add them (taps of weight 0 skipped). from_pixels.glsl's CONFIG 2 then weighs u_yl rows'
// sums per output element: the general path's arithmetic, with each horizontal sum computed
// once per (column, row) instead of once per output element and row.
uniform highp sampler2D u_px;
uniform int u_src_w;
uniform int u_src_h;
uniform int u_xs;
uniform int u_xl;
uniform float u_xscale;
uniform float u_xoff;
uniform float u_xsup;

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
            float wx = max(0.0, 1.0 - abs(float(jx) - cx) / u_xsup);
            if (wx > 0.0) {
                acc += wx * texelFetch(u_px, ivec2(clamp(jx, 0, u_src_w - 1), y), 0);
            }
        }
    }
    o_color = acc;
}
