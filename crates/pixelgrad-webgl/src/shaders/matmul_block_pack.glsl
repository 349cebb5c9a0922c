// Repacks a matmul operand into 4x4 blocks for matmul_block.glsl. The operand is a batch of
// logical matrices X[b, g, k] (rows g: M for A, N for B; k the shared axis) with element
// (b, g, k) at b*u_sb + g*u_sg + k*u_sk. Output texel ((b*u_gb + gb)*u_kq + q)*4 + j holds
// CONFIG 0 (A): X[b, 4gb+j, 4q .. 4q+3]  (one row, 4 consecutive k)
// CONFIG 1 (B): X[b, 4gb .. 4gb+3, 4q+j] (one k, 4 consecutive rows, i.e. 4 columns of B)
// with zeros past u_g rows or u_k columns, so the kernel reads the 4 texels of a 4x4 block as
// neighbours and padding multiplies as zero. The k axis is runs of u_kin (u_kin == u_k but for
// a product summed over its batch, whose batch is merged into k): k = kb*u_kin + kr lies at
// (b + kb)*u_sb + kr*u_sk (the batch index b is 0 then).
// Kept for a measured speed: the block path with both operands repacked by this pass (K and
// N odd) against the program rendered from the product's one definition, llvmpipe, WebGL2:
// 28.0x at [130,70]x[70,121] (bench/notes/2026-12-07-webgl-matmul-from-one-definition.md).
uniform int u_kin;
uniform highp sampler2D u_x;
// Texels holding data; the texture may be larger (its width is chosen, see matmul_block.rs).
uniform int u_texels;
uniform int u_g;
uniform int u_k;
uniform int u_gb;
uniform int u_kq;
uniform int u_sb;
uniform int u_sg;
uniform int u_sk;

// Element (b, g, k) of the operand, k in runs of u_kin.
float element(int b, int g, int k) {
    int kb = k / u_kin;
    return fetch(u_x, (b + kb) * u_sb + g * u_sg + (k - kb * u_kin) * u_sk);
}

void main() {
    int t = out_base() >> 2;
    vec4 v = vec4(0.0);
    if (t < u_texels) {
        int j = t & 3;
        int s = t >> 2;
        int q = s % u_kq;
        s /= u_kq;
        int gb = s % u_gb;
        int b = s / u_gb;
#if CONFIG == 0
        int g = 4 * gb + j;
        int k = 4 * q;
        int kb = k / u_kin;
        int kr = k - kb * u_kin;
        int src = (b + kb) * u_sb + g * u_sg + kr * u_sk;
        if (g < u_g && u_sk == 1 && (src & 3) == 0 && kr + 3 < u_kin) {
            // The common case (A row-major, K % 4 == 0): the 4 values are one texel.
            v = fetch4(u_x, src >> 2);
        } else if (g < u_g) {
            if (k < u_k) v.x = element(b, g, k);
            if (k + 1 < u_k) v.y = element(b, g, k + 1);
            if (k + 2 < u_k) v.z = element(b, g, k + 2);
            if (k + 3 < u_k) v.w = element(b, g, k + 3);
        }
#else
        int g = 4 * gb;
        int k = 4 * q + j;
        int kb = k / u_kin;
        int src = (b + kb) * u_sb + g * u_sg + (k - kb * u_kin) * u_sk;
        if (k < u_k && u_sg == 1 && (src & 3) == 0 && g + 3 < u_g) {
            // The common case (B row-major, N % 4 == 0): the 4 values are one texel.
            v = fetch4(u_x, src >> 2);
        } else if (k < u_k) {
            if (g < u_g) v.x = fetch(u_x, src);
            if (g + 1 < u_g) v.y = fetch(u_x, src + u_sg);
            if (g + 2 < u_g) v.z = fetch(u_x, src + 2 * u_sg);
            if (g + 3 < u_g) v.w = fetch(u_x, src + 3 * u_sg);
        }
#endif
    }
    o_color = v;
}
