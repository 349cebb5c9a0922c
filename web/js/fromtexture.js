// `pg.fromTexture(texture, shape)` (WebGL2; the layout and ownership rules are in gltexture.js).
import { PixelgradError } from './errors.js';
import { currentRuntime } from './runtime.js';
import { deviceTensor } from './tensor.js';

/**
 * A float32 tensor of `shape` from a WebGLTexture of the webgl runtime's context laid out as
 * `rt.textureLayout(shape)` says (copied by one framebuffer blit).
 */
export function fromTexture(texture, shape) {
  const what = 'fromTexture';
  const rt = currentRuntime(what);
  rt._check(what);
  if (rt.backend !== 'webgl') throw new Error(`${what}: the ${rt.backend} runtime has no WebGL2 textures: textures in and out are a WebGL2 feature (init({ backend: 'webgl' }))`);
  if (typeof WebGLTexture === 'undefined' || !(texture instanceof WebGLTexture)) {
    throw new Error(`${what}: texture must be a WebGLTexture of rt.glContext, got ${texture === null ? 'null' : typeof texture !== 'object' ? typeof texture : Object.prototype.toString.call(texture)}`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0 && d < 2 ** 32)) {
    throw new Error(`${what}: shape must be an array of whole numbers >= 0, got ${JSON.stringify(shape)}`);
  }
  if (!rt._keepGl.isTexture(texture)) {
    throw new PixelgradError(`${what}: the texture is not a live texture of rt.glContext (another context's, deleted, or never bound)`, { kind: 'deviceMismatch', op: what, shapes: [shape], backend: 'webgl' });
  }
  return deviceTensor(rt._inner.importTexture(texture, Uint32Array.from(shape)), rt);
}
