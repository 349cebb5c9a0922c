// Op::MatMul, batched: out[b, m, n] = sum_k A[b, m, k] * B[b, k, n]. Each fragment writes one
// texel, i.e. 4 consecutive outputs, looping over K once with 4 accumulators. Transposes and
// batch broadcasting are only strides (uniforms): element (b, m, k) of A is at
// b*u_a_sb + m*u_a_sm + k*u_a_sk, element (b, k, n) of B at b*u_b_sb + k*u_b_sk + n*u_b_sn.
// CONFIG 0: general. CONFIG 1: N % 4 == 0 and B's 4 outputs are one aligned texel, so the 4
// outputs share (b, m) and each k step reads one A element and one B texel. CONFIG 2: as 1, and
// A's k axis is contiguous and texel-aligned too, so each step consumes 4 values of k.
uniform highp sampler2D u_a;
uniform highp sampler2D u_b;
uniform int u_m;
uniform int u_n;
uniform int u_k;
uniform int u_a_sb;
uniform int u_a_sm;
uniform int u_a_sk;
uniform int u_b_sb;
uniform int u_b_sk;
uniform int u_b_sn;

void main() {
    int base = out_base();
    if (base >= u_out_n) {
        // Spare texels of the last texture row: nothing to compute.
        o_color = vec4(0.0);
        return;
    }
#if CONFIG == 0
    ivec4 ia, ib;
    for (int j = 0; j < 4; ++j) {
        int i = min(base + j, u_out_n - 1);
        int n = i % u_n;
        int t = i / u_n;
        int m = t % u_m;
        int b = t / u_m;
        ia[j] = b * u_a_sb + m * u_a_sm;
        ib[j] = b * u_b_sb + n * u_b_sn;
    }
    vec4 acc = vec4(0.0);
    for (int k = 0; k < u_k; ++k) {
        ivec4 oa = ia + k * u_a_sk;
        ivec4 ob = ib + k * u_b_sk;
        acc.x += fetch(u_a, oa.x) * fetch(u_b, ob.x);
        acc.y += fetch(u_a, oa.y) * fetch(u_b, ob.y);
        acc.z += fetch(u_a, oa.z) * fetch(u_b, ob.z);
        acc.w += fetch(u_a, oa.w) * fetch(u_b, ob.w);
    }
#else
    int n = base % u_n;
    int t = base / u_n;
    int m = t % u_m;
    int b = t / u_m;
    int ia = b * u_a_sb + m * u_a_sm;
    int ib = b * u_b_sb + n;
    vec4 acc = vec4(0.0);
#if CONFIG == 1
    for (int k = 0; k < u_k; ++k) {
        acc += fetch(u_a, ia + k * u_a_sk) * fetch4(u_b, (ib + k * u_b_sk) >> 2);
    }
#else
    int ta = ia >> 2;
    int tb = ib >> 2;
    int step_b = u_b_sk >> 2;
    for (int k = 0; k < u_k; k += 4) {
        vec4 av = fetch4(u_a, ta + (k >> 2));
        int r = tb + k * step_b;
        acc += av.x * fetch4(u_b, r);
        acc += av.y * fetch4(u_b, r + step_b);
        acc += av.z * fetch4(u_b, r + 2 * step_b);
        acc += av.w * fetch4(u_b, r + 3 * step_b);
    }
#endif
#endif
    o_color = acc;
}
