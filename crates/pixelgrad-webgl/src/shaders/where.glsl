// Op::Where: cond != 0 ? a : b, all three broadcast to the output shape.
uniform highp sampler2D u_c;
uniform highp sampler2D u_a;
uniform highp sampler2D u_b;
uniform int u_shape[MAX_RANK];
uniform int u_sc[MAX_RANK];
uniform int u_sa[MAX_RANK];
uniform int u_sb[MAX_RANK];

float compute(int i) {
    int ic = 0, ia = 0, ib = 0, rest = i;
    for (int d = MAX_RANK - 1; d >= 0; --d) {
        int c = rest % u_shape[d];
        rest /= u_shape[d];
        ic += c * u_sc[d];
        ia += c * u_sa[d];
        ib += c * u_sb[d];
    }
    return fetch(u_c, ic) != 0.0 ? fetch(u_a, ia) : fetch(u_b, ib);
}
