// `pg.fromPixels`: an image, canvas, video frame or ImageData → a model input tensor on the
// current runtime's device, resized, cropped or letterboxed, normalised and laid out in one
// pass (pixelgrad_image defines the filter: bilinear with half-pixel centres as ONNX
// Resize linear / half_pixel, antialiased when an axis shrinks by more than 2×).
//
// WebGPU: copyExternalImageToTexture + one compute pass (video directly, probed on each device,
// or through a 2D canvas where the probe or a device loss shows that failing: videoinput.js). WebGL2: texSubImage2D + one fragment
// pass. CPU: getImageData + the host reference. Synchronous, like TF.js's
// tf.browser.fromPixels: the GPU work is queued and nothing is read back. `dtype` 'float16' /
// 'uint8' add one conversion on the device (narrow_f16 / narrow8) where the backend stores
// those types (WebGPU, WebGL2, CPU), and are an Error in the webgl1 mode.
import { currentRuntime } from './runtime.js';
import { deviceTensor } from './tensor.js';
import { noteDirectCopy, probeEnd, probeStart, videoPath } from './videoinput.js';
/** @typedef {import('./tensor.js').Tensor} Tensor */

const has = (name) => typeof globalThis[name] !== 'undefined';
const is = (x, name) => has(name) && x instanceof globalThis[name];

/** The kind and pixel size of a source, or a clear error for anything else. */
export function sourceInfo(source, what = 'fromPixels') {
  if (source === null || typeof source !== 'object') throw new Error(`${what}: the source must be an image, canvas, video, ImageBitmap, VideoFrame or ImageData, got ${source === null ? 'null' : typeof source}`);
  if (is(source, 'ImageData')) return { kind: 'ImageData', width: source.width, height: source.height };
  if (is(source, 'HTMLVideoElement')) {
    const { videoWidth: width, videoHeight: height } = source;
    if (!width || !height) throw new Error(`${what}: the video is ${width}x${height} pixels: it has no frame yet (wait for 'loadeddata'; readyState is ${source.readyState})`);
    return { kind: 'HTMLVideoElement', width, height };
  }
  if (is(source, 'HTMLImageElement')) {
    if (!source.complete || !source.naturalWidth) throw new Error(`${what}: the image has not loaded (or failed to load): ${source.naturalWidth}x${source.naturalHeight} pixels`);
    return { kind: 'HTMLImageElement', width: source.naturalWidth, height: source.naturalHeight };
  }
  if (is(source, 'VideoFrame')) {
    if (source.format === null && !source.displayWidth) throw new Error(`${what}: the VideoFrame is closed`);
    return { kind: 'VideoFrame', width: source.displayWidth, height: source.displayHeight, format: source.format };
  }
  for (const k of ['HTMLCanvasElement', 'OffscreenCanvas', 'ImageBitmap']) {
    if (is(source, k)) return { kind: k, width: source.width, height: source.height };
  }
  throw new Error(`${what}: unsupported source ${Object.prototype.toString.call(source)}; expected HTMLCanvasElement, OffscreenCanvas, ImageBitmap, ImageData, HTMLImageElement, HTMLVideoElement or VideoFrame`);
}

let scratch = null;
let frameCanvas = null;

/** `source` drawn onto a reused 2D canvas of its size (`readable`: for getImageData). */
function drawn(source, info, readable) {
  const { width, height } = info;
  let c = readable ? scratch : frameCanvas;
  if (!c) {
    c = typeof document !== 'undefined' && document.createElement ? document.createElement('canvas') : new OffscreenCanvas(width, height);
    if (readable) scratch = c;
    else frameCanvas = c;
  }
  if (c.width !== width || c.height !== height) {
    c.width = width;
    c.height = height;
  }
  const ctx = c.getContext('2d', readable ? { willReadFrequently: true } : { alpha: true });
  ctx.clearRect(0, 0, width, height);
  ctx.drawImage(source, 0, 0, width, height);
  return { c, ctx };
}

/** RGBA bytes of a DOM source through a 2D canvas (the CPU backend's path). */
function readPixels(source, info, what) {
  const { width, height } = info;
  if (!width || !height) throw new Error(`${what}: the source is ${width}x${height} pixels; it has nothing to read`);
  const { ctx } = drawn(source, info, true);
  try {
    return ctx.getImageData(0, 0, width, height).data;
  } catch (e) {
    const msg = e && e.message ? `${e.name}: ${e.message}` : String(e);
    throw new Error(`${what}: the source cannot be read: ${msg} (the source is tainted: a canvas, image or video from another origin without CORS cannot be read)`);
  }
}

/**
 * An image as a model input on the current runtime's device: `[1, C, H, W]` (`layout: 'nchw'`,
 * the default) or `[1, H, W, C]` (`'nhwc'`). Options: `size: [h, w]` (default: the source's),
 * `fit: 'fill' | 'cover' | 'contain'`, `channels: 1 | 3 | 4`, `mean`, `std` (a number or one
 * per channel, in [0, 1] pixel units: `(v / 255 - mean) / std`), `pad` (the letterbox colour
 * of `contain`, in [0, 1]), `antialias: 'auto' | 'always' | 'never'`, `dtype`:
 * `'float32'` (default); `'float16'` (the float32 values rounded to half precision, nearest
 * even, in f16 storage: WebGPU, CPU and WebGL2; an Error in the webgl1 mode); `'uint8'` (the resampled pixel
 * values 0..255 as `floor(clamp(v * 255, 0, 255) + 0.5)` of the float32 value `v` in [0, 1],
 * in 8-bit storage; `mean` / `std` are an Error with it: WebGPU, WebGL2 and CPU; an Error in
 * the webgl1 mode).
 * float16 / uint8 tensors are for `data()` (exact values; a Uint8Array for uint8) and
 * `onnx.run` (a model input of that element type; widened to f32 on the device); other ops
 * take float32.
 * The tensor's `geometry` says where the content landed (`x, y, width, height` in output
 * pixels) and how output coordinates map back onto the source (`scaleX/Y`, `offsetX/Y`).
 */
export function fromPixels(source, opts = {}) {
  const what = 'fromPixels';
  const rt = currentRuntime(what);
  rt._check(what);
  if (opts === null || typeof opts !== 'object') throw new Error(`${what}: options must be an object`);
  const info = sourceInfo(source, what);
  const json = JSON.stringify(opts);
  let r;
  if (info.kind === 'ImageData') {
    r = rt._inner.fromPixelsBytes(new Uint8Array(source.data.buffer, source.data.byteOffset, source.data.byteLength), info.width, info.height, json);
  } else if (rt.backend === 'cpu') {
    const px = readPixels(source, info, what);
    r = rt._inner.fromPixelsBytes(new Uint8Array(px.buffer, px.byteOffset, px.byteLength), info.width, info.height, json);
  } else if (rt.backend === 'webgpu' && (info.kind === 'HTMLVideoElement' || info.kind === 'VideoFrame')) {
    // Directly, or through a 2D canvas where the direct copy loses the device (videoinput.js;
    // drawImage stays on the GPU in browsers with accelerated canvas).
    // The first direct copy on a device is the probe: inside a validation error scope, whose
    // result decides the frames after it.
    let vp = videoPath(rt);
    const probing = vp.path === 'direct' && probeStart(rt);
    if (vp.path === 'direct' && !probing) vp = videoPath(rt);
    rt.report.videoInput = vp;
    if (vp.path === 'direct') {
      noteDirectCopy(rt);
      const device = probing ? rt._inner.gpuDevice : null;
      if (device) device.pushErrorScope('validation');
      let thrown = null;
      try {
        r = rt._inner.fromPixelsSource(source, info.width, info.height, json);
      } catch (e) {
        thrown = e;
        throw e;
      } finally {
        if (device) device.popErrorScope().then((e) => probeEnd(rt, e || thrown), (e) => probeEnd(rt, e));
      }
    } else {
      const { c } = drawn(source, info, false);
      r = rt._inner.fromPixelsSource(c, info.width, info.height, json);
    }
  } else {
    r = rt._inner.fromPixelsSource(source, info.width, info.height, json);
  }
  const t = /** @type {Tensor & { geometry: import('./index.js').PixelGeometry }} */ (deviceTensor(r.tensor, rt, r.dtype));
  t.geometry = JSON.parse(r.geometry);
  return t;
}

/** `x` as a Uint8Array view (typed arrays and ArrayBuffers), or a clear error. */
function bytesOf(x, name, what) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x) && /** @type {Uint8Array} */ (x).BYTES_PER_ELEMENT === 1) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new Error(`${what}: ${name} must be a Uint8Array (or Uint8ClampedArray, ArrayBuffer) of 8-bit samples, got ${x === undefined ? 'nothing' : Object.prototype.toString.call(x)}`);
}

/**
 * A raw 4:2:0 frame (I420: `y, u, v`; NV12: `y, uv`; or `data` + `layout` as
 * `VideoFrame.copyTo` gives them) as a model input on the current runtime's device: the frame
 * is converted to 8-bit RGB with `matrix` / `fullRange` and preprocessed with the fromPixels
 * options, so the result equals `fromPixels` of the frame's RGB conversion. WebGPU and WebGL2
 * upload the samples (1.5 bytes a pixel, against 4 for RGBA) and convert them on the device in
 * one pass before the fromPixels one; the CPU runtime and the webgl1 mode convert on the host.
 * Strides default to packed rows.
 */
export function fromYUV(frame, opts = {}) {
  const what = 'fromYUV';
  const rt = currentRuntime(what);
  rt._check(what);
  if (frame === null || typeof frame !== 'object') throw new Error(`${what}: expects { format, width, height, y, u, v } (or uv for NV12, or data + layout), got ${frame === null ? 'null' : typeof frame}`);
  if (opts === null || typeof opts !== 'object') throw new Error(`${what}: options must be an object`);
  const { format, width, height } = frame;
  if (typeof format !== 'string') throw new Error(`${what}: format must be 'I420' or 'NV12'`);
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 0 || height < 0) {
    throw new Error(`${what}: width and height must be whole numbers, got ${width}x${height}`);
  }
  const nv12 = format.toUpperCase() === 'NV12';
  const cw = Math.ceil(width / 2);
  /** @type {Uint8Array} */
  const none = new Uint8Array(0);
  let y;
  let u;
  let v = none;
  let ys;
  let us;
  let vs = 0;
  if (frame.data !== undefined) {
    const data = bytesOf(frame.data, 'data', what);
    const n = nv12 ? 2 : 3;
    const layout = frame.layout;
    if (!Array.isArray(layout) || layout.length < n || !layout.slice(0, n).every((p) => p && Number.isInteger(p.offset) && Number.isInteger(p.stride) && p.offset >= 0 && p.stride >= 0)) {
      throw new Error(`${what}: layout must give ${n} planes as { offset, stride } (what VideoFrame.copyTo resolves to)`);
    }
    const at = (p) => data.subarray(Math.min(p.offset, data.length));
    [y, ys] = [at(layout[0]), layout[0].stride];
    [u, us] = [at(layout[1]), layout[1].stride];
    if (!nv12) [v, vs] = [at(layout[2]), layout[2].stride];
  } else {
    y = bytesOf(frame.y, 'y', what);
    u = bytesOf(nv12 ? frame.uv ?? frame.u : frame.u, nv12 ? 'uv' : 'u', what);
    if (!nv12) v = bytesOf(frame.v, 'v', what);
    ys = frame.yStride ?? width;
    us = frame.uStride ?? (nv12 ? 2 * cw : cw);
    vs = nv12 ? 0 : frame.vStride ?? cw;
  }
  for (const [name, s] of [['yStride', ys], ['uStride', us], ['vStride', vs]]) {
    if (!Number.isInteger(s) || s < 0) throw new Error(`${what}: ${name} must be a whole number of bytes, got ${s}`);
  }
  const matrix = frame.matrix ?? 'bt601';
  const r = rt._inner.fromYuvPlanes(format, width, height, y, ys, u, us, v, vs, String(matrix), !!frame.fullRange, JSON.stringify(opts));
  const t = /** @type {Tensor & { geometry: import('./index.js').PixelGeometry }} */ (deviceTensor(r.tensor, rt, r.dtype));
  t.geometry = JSON.parse(r.geometry);
  return t;
}

const YUV_FORMATS = { I420: 'I420', I420A: 'I420', NV12: 'NV12' };
const YUV_MATRICES = new Set(['bt601', 'smpte170m', 'bt470bg', 'bt709']);

/**
 * `fromPixels` with an awaited capture: on WebGPU and WebGL2, a video (its current frame) or a
 * `VideoFrame` in I420 or NV12 with a BT.601 / BT.709 matrix is copied out in its own format
 * (`VideoFrame.copyTo`, 1.5 bytes a pixel, no colour conversion) and goes through `fromYUV`,
 * instead of the browser's RGBA copy of the frame into a texture. Faster where the browser
 * holds frames in CPU memory (software rendering: 1.8x on WebGPU in BENCHMARKS.md); where
 * frames live on the GPU, copyTo reads them back, so measure. Everything
 * else (other sources, formats or matrices, the CPU runtime, the webgl1 mode, browsers without
 * `VideoFrame`) takes `fromPixels`. The result is the same tensor either way, up to one byte
 * step where the browser's own YUV conversion rounds differently.
 */
export async function fromPixelsAsync(source, opts = {}) {
  const what = 'fromPixelsAsync';
  const rt = currentRuntime(what);
  rt._check(what);
  const info = sourceInfo(source, what);
  const gpu = rt.backend === 'webgpu' || rt.backend === 'webgl';
  if (!gpu || !has('VideoFrame') || (info.kind !== 'HTMLVideoElement' && info.kind !== 'VideoFrame')) return fromPixels(source, opts);
  const frame = info.kind === 'VideoFrame' ? source : new VideoFrame(source);
  try {
    const format = YUV_FORMATS[frame.format];
    const cs = frame.colorSpace ?? {};
    const matrix = cs.matrix ?? 'bt601';
    const rect = frame.visibleRect;
    if (!format || !YUV_MATRICES.has(matrix) || !rect || frame.displayWidth !== rect.width || frame.displayHeight !== rect.height) {
      return fromPixels(frame, opts);
    }
    const data = new Uint8Array(frame.allocationSize());
    const layout = await frame.copyTo(data);
    return fromYUV({ format, width: rect.width, height: rect.height, data, layout, matrix, fullRange: !!cs.fullRange }, opts);
  } finally {
    if (frame !== source) frame.close();
  }
}

/**
 * Maps a box `[x0, y0, x1, y1]` in model-input pixels (e.g. a detector's output) back onto the
 * source, using the `geometry` of the `fromPixels` tensor it came from.
 * @returns {[number, number, number, number]}
 */
export function toSourceBox(box, geometry) {
  const g = geometry;
  const mx = (v) => (v - g.x) * g.scaleX + g.offsetX;
  const my = (v) => (v - g.y) * g.scaleY + g.offsetY;
  return [mx(box[0]), my(box[1]), mx(box[2]), my(box[3])];
}
