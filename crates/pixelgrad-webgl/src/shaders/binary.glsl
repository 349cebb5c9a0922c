// Op::Binary with broadcasting. CONFIG is the opcode (see ops/elementwise.rs). Shapes are
// right-aligned and padded to MAX_RANK; a broadcast axis has stride 0.
uniform highp sampler2D u_a;
uniform highp sampler2D u_b;
uniform int u_shape[MAX_RANK];
uniform int u_sa[MAX_RANK];
uniform int u_sb[MAX_RANK];

float f_nan() { return uintBitsToFloat(0x7FC00000u); }
float f_inf() { return uintBitsToFloat(0x7F800000u); }

float powf_rs(float x, float p) {
    if (p == 0.0) return 1.0;
    if (x == 0.0) return p > 0.0 ? 0.0 : f_inf();
    float r = exp2(p * log2(abs(x)));
    if (x < 0.0) {
        if (floor(p) != p) return f_nan();
        if (mod(p, 2.0) == 1.0) r = -r;
    }
    return r;
}

float compute(int i) {
    int ia = 0, ib = 0, rest = i;
    for (int d = MAX_RANK - 1; d >= 0; --d) {
        int c = rest % u_shape[d];
        rest /= u_shape[d];
        ia += c * u_sa[d];
        ib += c * u_sb[d];
    }
    float a = fetch(u_a, ia);
    float b = fetch(u_b, ib);
#if CONFIG == 0
    return a + b;
#elif CONFIG == 1
    return a - b;
#elif CONFIG == 2
    return a * b;
#elif CONFIG == 3
    return a / b;
#elif CONFIG == 4
    return max(a, b);
#elif CONFIG == 5
    return min(a, b);
#elif CONFIG == 6
    return powf_rs(a, b);
#elif CONFIG == 7
    return a > b ? 1.0 : 0.0;
#elif CONFIG == 8
    return a >= b ? 1.0 : 0.0;
#else
    return a == b ? 1.0 : 0.0;
#endif
}
