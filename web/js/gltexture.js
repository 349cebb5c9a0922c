// WebGL2 textures in and out on the webgl runtime: `pg.fromTexture(texture, shape)` and
// `tensor.texture()`. A tensor's texture layout is the backend's own: 4 consecutive float32
// elements per texel, texels row-major over a texture of `rt.textureLayout(shape)`'s width and
// height, in its `internalFormat` (RGBA32F, or RGBA16F in the precision-limited mode). Both are
// one framebuffer blit on the runtime's context (`rt.glContext`), nothing read back.
//
// Ownership: `fromTexture` copies, so the page's texture stays the page's (reuse or delete it
// right after); `texture()` makes a new texture that is the caller's (`gl.deleteTexture`), which
// outlives the tensor's `dispose()` and dies with the context on a context loss.

/** `{ texture, width, height, internalFormat }`: a new texture with device tensor `inner`'s texels. */
export function textureOut(rt, inner) {
  return rt._inner.exportTexture(inner);
}
