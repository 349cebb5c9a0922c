// One triangle covering the whole viewport: (-1, -1), (3, -1), (-1, 3).
#ifdef PG_ES300
// Generated from gl_VertexID: no vertex buffers.
void main() {
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
#else
// GLSL ES 1.00 has no gl_VertexID: the corners come from a 3-vertex buffer at attribute 0.
attribute vec2 a_pos;
void main() {
    gl_Position = vec4(a_pos, 0.0, 1.0);
}
#endif
