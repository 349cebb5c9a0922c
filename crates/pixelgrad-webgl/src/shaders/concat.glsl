// Op::Concat of up to 4 inputs along one axis (more inputs are joined in several passes).
// Output viewed as [outer, u_total, inner]; input j covers axis positions u_off[j]..u_off[j+1].
uniform highp sampler2D u_x0;
uniform highp sampler2D u_x1;
uniform highp sampler2D u_x2;
uniform highp sampler2D u_x3;
uniform int u_off[5];
uniform int u_inner;
uniform int u_total;

float compute(int i) {
    int r = i % u_inner;
    int a = (i / u_inner) % u_total;
    int o = i / (u_inner * u_total);
    // Samplers cannot be indexed dynamically in GLSL ES 3.00, hence the chain.
    if (a < u_off[1]) {
        int size = u_off[1];
        return fetch(u_x0, (o * size + a) * u_inner + r);
    } else if (a < u_off[2]) {
        int size = u_off[2] - u_off[1];
        return fetch(u_x1, (o * size + a - u_off[1]) * u_inner + r);
    } else if (a < u_off[3]) {
        int size = u_off[3] - u_off[2];
        return fetch(u_x2, (o * size + a - u_off[2]) * u_inner + r);
    }
    int size = u_off[4] - u_off[3];
    return fetch(u_x3, (o * size + a - u_off[3]) * u_inner + r);
}
