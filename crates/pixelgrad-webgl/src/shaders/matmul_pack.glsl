// Repacks a matmul operand into the form matmul.glsl reads fastest: out[b, r, c] for c < u_c is
// element b*u_sb + r*u_sr + c*u_sc of u_x (any transpose or broadcast is just strides), and 0
// for u_c <= c < u_c4, so every row is a whole number of texels (u_c4 % 4 == 0) and padding
// multiplies as zero. The 4 elements of an output texel share (b, r), found with one division.
// Kept for a measured speed: the packed path it feeds (this pass + matmul.glsl's nt_any)
// against the program rendered from the product's one definition, llvmpipe, WebGL2: 6.1x
// at [128,128]x[128,10] (an MLP's last layer) (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
uniform highp sampler2D u_x;
uniform int u_r;
uniform int u_c;
uniform int u_c4;
uniform int u_sb;
uniform int u_sr;
uniform int u_sc;

void main() {
    int base = out_base();
    vec4 v = vec4(0.0);
    if (base < u_out_n) {
        int c = base % u_c4;
        int t = base / u_c4;
        int r = t % u_r;
        int b = t / u_r;
        int src = b * u_sb + r * u_sr + c * u_sc;
        if (c < u_c) v.x = fetch(u_x, src);
        if (c + 1 < u_c) v.y = fetch(u_x, src + u_sc);
        if (c + 2 < u_c) v.z = fetch(u_x, src + 2 * u_sc);
        if (c + 3 < u_c) v.w = fetch(u_x, src + 3 * u_sc);
    }
    o_color = v;
}
