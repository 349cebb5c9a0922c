// One pass of a reduction tree. The input is viewed as [outer, u_n, inner]; the output is
// [outer, u_m, inner] with u_m = ceil(u_n / u_group): each output combines up to u_group
// consecutive elements along the axis. Passes repeat until u_m == 1.
// CONFIG 0 sum, 1 max, 2 min, 3 "first index whose value equals u_best" (argmax's last step
// before a min tree; misses give 3e38), 4 log-sum-exp of the group (every pass: the
// log-sum-exp of partial log-sum-exps is the whole one), 5 index of the first maximum of
// the group (argmax in one pass when the whole axis is one group).
uniform highp sampler2D u_x;
uniform highp sampler2D u_best;  // CONFIG 3 only: [outer, 1, inner] maxima
uniform int u_n;
uniform int u_m;
uniform int u_inner;
uniform int u_group;

// Element i of the input: the sampler, or (REDUCE_FUSED passes) a fused read of a pending
// elementwise computation, defined before this body.
#ifndef LOAD
#define LOAD(i) fetch(u_x, i)
// Elements i .. i+3 (i % 4 == 0): one texel.
#define LOAD4(i) fetch4(u_x, (i) >> 2)
#define PG_REDUCE4 1
#elif defined(PG_LOAD4)
#define LOAD4(i) pg_load4(i)
#define PG_REDUCE4 1
#endif

float compute(int i) {
    int inner = i % u_inner;
    int j = (i / u_inner) % u_m;
    int o = i / (u_inner * u_m);
    int k0 = j * u_group;
    int k1 = min(u_n, k0 + u_group);
    int base = o * u_n * u_inner + inner;
#if CONFIG == 3
    float best = fetch(u_best, o * u_inner + inner);
    for (int k = k0; k < k1; ++k) {
        if (LOAD(base + k * u_inner) == best) return float(k);
    }
    return 3.0e38;
#elif CONFIG == 5
    float best = LOAD(base + k0 * u_inner);
    int at = k0;
    for (int k = k0 + 1; k < k1; ++k) {
        float v = LOAD(base + k * u_inner);
        if (v > best) {
            best = v;
            at = k;
        }
    }
    return float(at);
#elif CONFIG == 4
    // Running maximum m and sum s of exp(v - m). NaN wins (bit test: compilers may fold
    // v != v); an infinite maximum is the result; -inf elements add nothing.
    float m = uintBitsToFloat(0xff800000u);
    float s = 0.0;
    bool nan = false;
    for (int k = k0; k < k1; ++k) {
        float v = LOAD(base + k * u_inner);
        nan = nan || (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u;
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else if (v > -3.4e38 && m < 3.4e38) {
            s += exp(v - m);
        }
    }
    if (nan) return uintBitsToFloat(0x7fc00000u);
    if (abs(m) > 3.4e38) return m;
    return m + log(s);
#else
#ifdef PG_REDUCE4
    // One loop, one read of each kind (fused reads are inlined where they are used): whole
    // texels where the run is consecutive and a texel lies inside it, else one element,
    // replicated (max, min) or padded with zeros (sum) to a texel.
#if CONFIG == 0
    float acc = 0.0;
#elif CONFIG == 1
    float acc = uintBitsToFloat(0xff800000u);
#else
    float acc = uintBitsToFloat(0x7f800000u);
#endif
    int k = k0;
    while (k < k1) {
        vec4 v;
        int at = base + k * u_inner;
        if (u_inner == 1 && (at & 3) == 0 && k + 3 < k1) {
            v = LOAD4(at);
            k += 4;
        } else {
            float e = LOAD(at);
            v = CONFIG == 0 ? vec4(e, 0.0, 0.0, 0.0) : vec4(e);
            k += 1;
        }
#if CONFIG == 0
        acc += (v.x + v.y) + (v.z + v.w);
#elif CONFIG == 1
        acc = max(acc, max(max(v.x, v.y), max(v.z, v.w)));
#else
        acc = min(acc, min(min(v.x, v.y), min(v.z, v.w)));
#endif
    }
    return acc;
#else
    float acc = LOAD(base + k0 * u_inner);
    for (int k = k0 + 1; k < k1; ++k) {
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
#endif
}
