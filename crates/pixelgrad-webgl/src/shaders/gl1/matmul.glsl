// Op::MatMul, batched, for any strides: out[b, m, n] = sum_k A[b, m, k] * B[b, k, n] with
// element (b, m, k) of A at b*u_a_sb + m*u_a_sm + k*u_a_sk and (b, k, n) of B at
// b*u_b_sb + k*u_b_sk + n*u_b_sn (a transpose or a broadcast batch is just strides, so nothing
// is repacked). Each fragment writes 4 consecutive outputs. The k loop has the constant bound
// MAX_LOOP and breaks at u_k (GLSL ES 1.00 loops); the backend refuses a longer K.
uniform highp sampler2D u_a;
uniform vec2 u_a_size;
uniform highp sampler2D u_b;
uniform vec2 u_b_size;
uniform float u_m;
uniform float u_n;
uniform float u_k;
uniform float u_a_sb;
uniform float u_a_sm;
uniform float u_a_sk;
uniform float u_b_sb;
uniform float u_b_sk;
uniform float u_b_sn;

float compute(float i) {
    vec2 t = pg_divmod(i, u_n);
    vec2 s = pg_divmod(t.x, u_m);
    float ia = s.x * u_a_sb + s.y * u_a_sm;
    float ib = s.x * u_b_sb + t.y * u_b_sn;
    float acc = 0.0;
    for (float q = 0.0; q < MAX_LOOP; q += 1.0) {
        if (q >= u_k) break;
        acc += fetch(u_a, u_a_size, ia) * fetch(u_b, u_b_size, ib);
        ia += u_a_sk;
        ib += u_b_sk;
    }
    return acc;
}
