// Op::Concat of up to 4 inputs along one axis (as shaders/concat.glsl).
uniform highp sampler2D u_x0;
uniform vec2 u_x0_size;
uniform highp sampler2D u_x1;
uniform vec2 u_x1_size;
uniform highp sampler2D u_x2;
uniform vec2 u_x2_size;
uniform highp sampler2D u_x3;
uniform vec2 u_x3_size;
uniform float u_off[5];
uniform float u_inner;
uniform float u_total;

float compute(float i) {
    vec2 p = pg_divmod(i, u_inner);
    vec2 q = pg_divmod(p.x, u_total);
    float r = p.y;
    float a = q.y;
    float o = q.x;
    if (a < u_off[1]) {
        return fetch(u_x0, u_x0_size, (o * u_off[1] + a) * u_inner + r);
    } else if (a < u_off[2]) {
        float size = u_off[2] - u_off[1];
        return fetch(u_x1, u_x1_size, (o * size + a - u_off[1]) * u_inner + r);
    } else if (a < u_off[3]) {
        float size = u_off[3] - u_off[2];
        return fetch(u_x2, u_x2_size, (o * size + a - u_off[2]) * u_inner + r);
    }
    float size = u_off[4] - u_off[3];
    return fetch(u_x3, u_x3_size, (o * size + a - u_off[3]) * u_inner + r);
}
