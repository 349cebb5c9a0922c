// fromPixels with dtype 'uint8': f32 pixel values in [0, 1] (the from_pixels pass's output with
// mean 0, std 1) drawn into an RGBA8UI texture, 4 elements per texel in the f32 layout (the
// layout 8-bit uploads use; elements past u_out_n are 0, as uploads pad). Each value becomes
// floor(clamp(v * 255, 0, 255) + 0.5) in f32 arithmetic, what the WebGPU pack_u8 kernel and
// the host reference compute. The texel is read straight from the highp sampler.
uniform highp sampler2D u_x;

void main() {
    int base = out_base();
    highp uvec4 r = uvec4(0u);
    if (base < u_out_n) {
        int t = base >> 2;
        int w = textureSize(u_x, 0).x;
        highp vec4 v = texelFetch(u_x, ivec2(t % w, t / w), 0);
        highp uvec4 b = uvec4(floor(clamp(v * 255.0, 0.0, 255.0) + 0.5));
        r.x = b.x;
        if (base + 1 < u_out_n) r.y = b.y;
        if (base + 2 < u_out_n) r.z = b.z;
        if (base + 3 < u_out_n) r.w = b.w;
    }
    o_color = r;
}
