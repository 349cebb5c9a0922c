// Renders tiles of a tensor into an RGBA8 image with a diverging colour map: blue for
// negative, white at 0, red for positive, scaled by the max |value| (u_scale, a 1-element
// tensor computed on the GPU by a reduction). Each tile is u_th x u_tw elements drawn as
// u_pix x u_pix pixels; tiles sit in a grid of u_cols columns separated by u_border grey pixels.
uniform highp sampler2D u_x;
uniform highp sampler2D u_scale;
uniform int u_th;
uniform int u_tw;
uniform int u_cols;
uniform int u_tiles;
uniform int u_pix;
uniform int u_border;

const vec4 BACKGROUND = vec4(0.5, 0.5, 0.5, 1.0);

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    int cw = u_tw * u_pix + u_border;
    int ch = u_th * u_pix + u_border;
    int ix = p.x - u_border;
    int iy = p.y - u_border;
    int tx = ix / cw;
    int ty = iy / ch;
    int wx = ix - tx * cw;
    int wy = iy - ty * ch;
    int tile = ty * u_cols + tx;
    if (ix < 0 || iy < 0 || wx >= u_tw * u_pix || wy >= u_th * u_pix || tx >= u_cols || tile >= u_tiles) {
        o_color = BACKGROUND;
        return;
    }
    int e = tile * (u_th * u_tw) + (wy / u_pix) * u_tw + wx / u_pix;
    float s = fetch(u_scale, 0);
    float t = s > 0.0 ? clamp(fetch(u_x, e) / s, -1.0, 1.0) : 0.0;
    vec3 white = vec3(1.0);
    vec3 c = t >= 0.0 ? mix(white, vec3(0.85, 0.1, 0.1), t) : mix(white, vec3(0.1, 0.25, 0.85), -t);
    o_color = vec4(c, 1.0);
}
