// Op::Widen in the webgl1 mode: 8-bit storage in a byte texture (RGBA / UNSIGNED_BYTE, 4
// elements per texel as every tensor), each channel sampled as byte / 255. CONFIG 0: i8 (the
// two's-complement byte), 1: u8. byte / 255 * 255 lies far closer than 0.5 to the byte on any
// sampler, so rounding to the nearest whole number gives it back exactly.
uniform highp sampler2D u_x;
uniform vec2 u_x_size;

float compute(float i) {
    float b = floor(fetch(u_x, u_x_size, i) * 255.0 + 0.5);
#if CONFIG == 0
    if (b >= 128.0) b -= 256.0;
#endif
    return b;
}
