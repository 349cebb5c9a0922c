// Op::Fill: every element is u_value.
uniform float u_value;

float compute(INDEX i) {
    return u_value;
}
