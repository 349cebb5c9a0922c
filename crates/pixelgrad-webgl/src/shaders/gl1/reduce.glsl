// One pass of a reduction tree (as shaders/reduce.glsl): the input viewed as [outer, u_n,
// inner], each output combining up to u_group (<= GROUP) consecutive elements along the axis.
// CONFIG 0 sum, 1 max, 2 min, 3 first index whose value equals u_best (3e38 when none),
// 5 index of the first maximum of the group, 4 log-sum-exp of the group (of partial log-sum-exps in later passes). GLSL ES 1.00 has no
// bit tests: finite inputs and -inf are exact in meaning, NaN is not detected here.
// The loop has the constant bound GROUP and breaks at the group's end (GLSL ES 1.00 loops).
#define GROUP 16
uniform highp sampler2D u_x;
uniform vec2 u_x_size;
uniform highp sampler2D u_best;
uniform vec2 u_best_size;
uniform float u_n;
uniform float u_m;
uniform float u_inner;
uniform float u_group;

#ifndef LOAD
#define LOAD(i) fetch(u_x, u_x_size, i)
#endif

float compute(float i) {
    vec2 a = pg_divmod(i, u_inner);
    vec2 b = pg_divmod(a.x, u_m);
    float inner = a.y;
    float o = b.x;
    float k0 = b.y * u_group;
    float k1 = min(u_n, k0 + u_group);
    float base = o * u_n * u_inner + inner;
#if CONFIG == 3
    float best = fetch(u_best, u_best_size, o * u_inner + inner);
    for (int q = 0; q < GROUP; ++q) {
        float k = k0 + float(q);
        if (k >= k1) break;
        if (LOAD(base + k * u_inner) == best) return k;
    }
    return 3.0e38;
#elif CONFIG == 5
    float best = LOAD(base + k0 * u_inner);
    float at = k0;
    for (int q = 1; q < GROUP; ++q) {
        float k = k0 + float(q);
        if (k >= k1) break;
        float v = LOAD(base + k * u_inner);
        if (v > best) {
            best = v;
            at = k;
        }
    }
    return at;
#elif CONFIG == 4
    float m = LOAD(base + k0 * u_inner);
    float s = 1.0;
    for (int q = 1; q < GROUP; ++q) {
        float k = k0 + float(q);
        if (k >= k1) break;
        float v = LOAD(base + k * u_inner);
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else if (v > -3.4e38 && m < 3.4e38) {
            s += exp(v - m);
        }
    }
    if (abs(m) > 3.4e38) return m;
    return m + log(s);
#else
    float acc = LOAD(base + k0 * u_inner);
    for (int q = 1; q < GROUP; ++q) {
        float k = k0 + float(q);
        if (k >= k1) break;
        float v = LOAD(base + k * u_inner);
#if CONFIG == 0
        acc += v;
#elif CONFIG == 1
        acc = max(acc, v);
#else
        acc = min(acc, v);
#endif
    }
    return acc;
#endif
}
