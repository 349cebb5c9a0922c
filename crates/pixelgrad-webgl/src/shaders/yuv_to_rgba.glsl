// fromYUV: a 4:2:0 frame's samples drawn into the RGBA8 pixel texture that from_pixels.glsl
// reads, one fragment per pixel (the viewport is the frame: fragment (x, y) is pixel (x, y), row
// 0 at the top as texSubImage2D puts it). The samples sit in two integer textures: the luma
// (R8UI, one per pixel) and the interleaved chroma (RG8UI, one (Cb, Cr) pair per 2x2 block), so
// each pixel is two texel fetches at its own coordinates, no index arithmetic. The colour
// formula is YuvMatrix::rgb's, in f32; each channel is rounded as the host's to_rgba8 rounds,
// floor(clamp(v) * 255 + 0.5), and written as byte / 255, which the RGBA8 target stores
// exactly. The same as yuv_to_rgba.wgsl.
uniform highp usampler2D u_luma;
uniform highp usampler2D u_chroma;
// Y' = Y * u_a + u_b, Cb' = (Cb - 128) * u_c; luma weights of red and blue.
uniform float u_a;
uniform float u_b;
uniform float u_c;
uniform float u_kr;
uniform float u_kb;

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    float yp = float(texelFetch(u_luma, p, 0).r) * u_a + u_b;
    vec2 uv = (vec2(texelFetch(u_chroma, p >> 1, 0).rg) - 128.0) * u_c;
    float r = yp + 2.0 * (1.0 - u_kr) * uv.y;
    float b = yp + 2.0 * (1.0 - u_kb) * uv.x;
    float g = (yp - u_kr * r - u_kb * b) / (1.0 - u_kr - u_kb);
    vec3 bytes = floor(clamp(vec3(r, g, b), 0.0, 1.0) * 255.0 + 0.5);
    o_color = vec4(bytes / 255.0, 1.0);
}
