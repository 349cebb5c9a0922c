// One triangle covering the whole viewport from a 3-vertex buffer (GLSL ES 1.00 has no
// gl_VertexID): (-1, -1), (3, -1), (-1, 3).
attribute vec2 a_pos;
void main() {
    gl_Position = vec4(a_pos, 0.0, 1.0);
}
