// Op::Concat of up to 4 inputs along one axis (more inputs are joined in several passes).
// Output viewed as [outer, u_total, inner]; input j covers axis positions u_off[j]..u_off[j+1].
SAMPLER(u_x0, u_x0_size);
SAMPLER(u_x1, u_x1_size);
SAMPLER(u_x2, u_x2_size);
SAMPLER(u_x3, u_x3_size);
uniform INDEX u_off[5];
uniform INDEX u_inner;
uniform INDEX u_total;

float compute(INDEX i) {
    INDEX r = PG_MOD(i, u_inner);
    INDEX a = PG_MOD(PG_DIV(i, u_inner), u_total);
    INDEX o = PG_DIV(i, u_inner * u_total);
    // Samplers cannot be indexed dynamically in GLSL ES, hence the chain.
    if (a < u_off[1]) {
        INDEX size = u_off[1];
        return FETCH(u_x0, u_x0_size, (o * size + a) * u_inner + r);
    } else if (a < u_off[2]) {
        INDEX size = u_off[2] - u_off[1];
        return FETCH(u_x1, u_x1_size, (o * size + a - u_off[1]) * u_inner + r);
    } else if (a < u_off[3]) {
        INDEX size = u_off[3] - u_off[2];
        return FETCH(u_x2, u_x2_size, (o * size + a - u_off[2]) * u_inner + r);
    }
    INDEX size = u_off[4] - u_off[3];
    return FETCH(u_x3, u_x3_size, (o * size + a - u_off[3]) * u_inner + r);
}
