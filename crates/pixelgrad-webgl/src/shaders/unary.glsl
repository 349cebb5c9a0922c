// Op::Unary. CONFIG is the opcode (see ops/elementwise.rs); u_p0/u_p1 carry scalar parameters.
uniform highp sampler2D u_x;
uniform float u_p0;
uniform float u_p1;

float f_nan() { return uintBitsToFloat(0x7FC00000u); }
float f_inf() { return uintBitsToFloat(0x7F800000u); }

// x^p with Rust's powf conventions: x^0 = 1, 0^p>0 = 0, 0^p<0 = inf, negative x only for whole p.
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
    float x = fetch(u_x, i);
#if CONFIG == 0
    return -x;
#elif CONFIG == 1
    return exp(x);
#elif CONFIG == 2
    return x < 0.0 ? f_nan() : (x == 0.0 ? -f_inf() : log(x));
#elif CONFIG == 3
    return x < 0.0 ? f_nan() : sqrt(x);
#elif CONFIG == 4
    return 1.0 / x;
#elif CONFIG == 5
    // tanh from exp(-2|x|) never overflows (GLSL's tanh may return NaN for large |x|).
    float e = exp(-2.0 * abs(x));
    float t = (1.0 - e) / (1.0 + e);
    return x < 0.0 ? -t : t;
#elif CONFIG == 6
    return 1.0 / (1.0 + exp(-x));
#elif CONFIG == 7
    return abs(x);
#elif CONFIG == 8
    return sincos(x).x;
#elif CONFIG == 9
    return sincos(x).y;
#elif CONFIG == 10
    return x * u_p0 + u_p1;
#elif CONFIG == 11
    return powf_rs(x, u_p0);
#elif CONFIG == 12
    return max(x, u_p0);
#elif CONFIG == 13
    return min(x, u_p0);
#else
    return x > u_p0 ? 1.0 : 0.0;
#endif
}
