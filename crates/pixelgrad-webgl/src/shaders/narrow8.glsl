// f32 values drawn into an 8-bit integer texture, 4 elements per texel in the f32 layout (the
// layout 8-bit uploads use; elements past u_out_n are 0, as uploads pad). The texel is read
// straight from the highp sampler.
//   CONFIG 0 (Op::Narrow8, i8 into RGBA8I) and 1 (u8 into RGBA8UI): the nearest integer, ties
//     to even (roundEven), saturated to [-128, 127] or [0, 255]; NaN gives 0. The same as
//     the WebGPU narrow8 kernel and the CPU.
//   CONFIG 2 (fromPixels with dtype 'uint8', RGBA8UI): pixel values in [0, 1] as
//     floor(clamp(v * 255, 0, 255) + 0.5) in f32 arithmetic.
uniform highp sampler2D u_x;

void main() {
    int base = out_base();
    highp vec4 b = vec4(0.0);
    if (base < u_out_n) {
        int t = base >> 2;
        int w = textureSize(u_x, 0).x;
        highp vec4 v = texelFetch(u_x, ivec2(t % w, t / w), 0);
#if CONFIG == 2
        b = floor(clamp(v * 255.0, 0.0, 255.0) + 0.5);
#else
        // NaN by its bits: no compiler may fold this test away.
        bvec4 nan = greaterThan(floatBitsToUint(v) & uvec4(0x7fffffffu), uvec4(0x7f800000u));
#if CONFIG == 0
        b = clamp(roundEven(v), -128.0, 127.0);
#else
        b = clamp(roundEven(v), 0.0, 255.0);
#endif
        b = mix(b, vec4(0.0), nan);
#endif
        // Elements past the end stay 0.
        if (base + 1 >= u_out_n) b.y = 0.0;
        if (base + 2 >= u_out_n) b.z = 0.0;
        if (base + 3 >= u_out_n) b.w = 0.0;
    }
#if CONFIG == 0
    o_color = ivec4(b);
#else
    o_color = uvec4(b);
#endif
}
