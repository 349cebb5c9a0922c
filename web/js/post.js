// Post-processing on the device: ranking, suppression and upsampling of a model's outputs
// without reading them back (the engine's composites; only the small result is read when
// asked). Inputs are pg tensors (host tensors are uploaded once); results live on the device.
import { currentRuntime } from './runtime.js';
import { release } from './instance.js';
import { Tensor, deviceTensor } from './tensor.js';
import { toSourceBox } from './image.js';
import { drawOnGpu, isGpuTarget } from './overlay.js';
import { PixelgradError } from './errors.js';

function dev(x, rt, what) {
  if (!(x instanceof Tensor)) throw new Error(`${what}: expects a pg tensor, got ${x === null ? 'null' : typeof x}`);
  return x._onDevice(rt, what);
}

/** The `k` largest values along the last axis and their indices (float32), largest first; ties in index order, NaN last. */
export function topk(x, k) {
  const rt = currentRuntime('topk');
  if (!Number.isInteger(k) || k < 1) throw new Error(`topk: k must be a positive integer, got ${k}`);
  const [v, i] = rt._inner.topk(dev(x, rt, 'topk'), k);
  return { values: deviceTensor(v, rt), indices: deviceTensor(i, rt) };
}

/**
 * `tensors` (float32, equal shapes but on `axis`) joined along `axis` (default 0) on the
 * device: e.g. recorded `fromPixels` inputs or features `[1, ...]` into a training set
 * `[n, ...]` for `model.fit`, with nothing read back. Joined pairwise in a balanced tree.
 */
export function concat(tensors, axis = 0) {
  const rt = currentRuntime('concat');
  if (!Array.isArray(tensors) || tensors.length === 0) throw new Error('concat: expects a non-empty array of pg tensors');
  if (!Number.isInteger(axis) || axis < 0) throw new Error(`concat: axis must be a non-negative integer, got ${axis}`);
  let level = tensors.map((t, k) => {
    if (t instanceof Tensor && t.dtype !== 'float32') throw new Error(`concat: tensor ${k} is ${t.dtype}; concat takes float32`);
    return { inner: dev(t, rt, 'concat'), own: false };
  });
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i < level.length; i += 2) {
      if (i + 1 === level.length) {
        next.push(level[i]);
        continue;
      }
      next.push({ inner: rt._inner.concat2(level[i].inner, level[i + 1].inner, axis), own: true });
      for (const p of [level[i], level[i + 1]]) if (p.own) release(p.inner);
    }
    level = next;
  }
  const only = level[0];
  // A single tensor is returned as a copy (concat of one), so disposing either is safe.
  return deviceTensor(only.own ? only.inner : rt._inner.concat1(only.inner, axis), rt);
}

/** Softmax along `axis` (default the last). */
export function softmax(x, axis = -1) {
  const rt = currentRuntime('softmax');
  if (!Number.isInteger(axis)) throw new Error(`softmax: axis must be an integer, got ${axis}`);
  return deviceTensor(rt._inner.softmax(dev(x, rt, 'softmax'), axis), rt);
}

/**
 * Greedy non-maximum suppression: `boxes [N, 4]` (corners `x1, y1, x2, y2`, any order) and
 * `scores [N]` → `[maxOutputs]` selected indices (float32) in selection order, -1 after the
 * last. Options: `maxOutputs` (default N, at least 1), `iouThreshold` (default 0.5),
 * `scoreThreshold` (default: every box but NaN scores).
 */
export function nonMaxSuppression(boxes, scores, opts = {}) {
  const rt = currentRuntime('nonMaxSuppression');
  const n = boxes instanceof Tensor ? boxes.shape[0] : 0;
  const max = opts.maxOutputs ?? Math.max(n, 1);
  if (!Number.isInteger(max) || max < 1) throw new Error(`nonMaxSuppression: maxOutputs must be a positive integer, got ${max}`);
  const iou = opts.iouThreshold ?? 0.5;
  if (typeof iou !== 'number') throw new Error('nonMaxSuppression: iouThreshold must be a number');
  const st = opts.scoreThreshold;
  if (st !== undefined && typeof st !== 'number') throw new Error('nonMaxSuppression: scoreThreshold must be a number');
  const b = dev(boxes, rt, 'nonMaxSuppression');
  const s = dev(scores, rt, 'nonMaxSuppression');
  return deviceTensor(rt._inner.nonMaxSuppression(b, s, max, iou, st), rt);
}

/**
 * `x [N, C, H, W]` resampled to `[N, C, h, w]` with half-pixel centres (ONNX Resize linear);
 * `antialias`: 'never' (default: plain bilinear, for upsampling heatmaps and masks), 'auto'
 * (stretch the filter above 2× shrink) or 'always'.
 */
export function resizeBilinear(x, size, opts = {}) {
  const rt = currentRuntime('resizeBilinear');
  if (!Array.isArray(size) || size.length !== 2 || !size.every((d) => Number.isInteger(d) && d > 0)) {
    throw new Error(`resizeBilinear: size must be [height, width] of positive integers, got ${JSON.stringify(size)}`);
  }
  return deviceTensor(rt._inner.resizeBilinear(dev(x, rt, 'resizeBilinear'), size[0], size[1], opts.antialias ?? 'never'), rt);
}

/**
 * Draws a map `[h, w]` (also `[1, h, w]`, `[1, 1, h, w]`: a heatmap, a probability map, a
 * mask) on `canvas`, colour-mapped on the device (only the 8-bit image is read back).
 * `colormap`: 'diverging' (blue < 0 < red, white at 0, scaled by max |v|), 'heat' (black → red
 * → yellow → white over `range`) or 'mask' (red with alpha = the value over `range`).
 * `range`: [lo, hi] (default [0, 1]). Without `overlay` the canvas is resized to the map;
 * with `overlay: true` the map is stretched over what the canvas shows (a mask over the frame).
 * Resolves when drawn.
 */
export async function drawHeatmap(x, canvas, opts = {}) {
  const rt = currentRuntime('drawHeatmap');
  const [lo, hi] = opts.range ?? [0, 1];
  if (isGpuTarget(canvas)) {
    // a WebGPU canvas context or a GPUTexture: drawn on the device, nothing read back (overlay.js)
    if (rt.backend !== 'webgpu') throw new Error(`drawHeatmap: a WebGPU canvas context or GPUTexture needs the webgpu runtime, not ${rt.backend}; pass a canvas for the 2D path`);
    const inner = dev(x, rt, 'drawHeatmap');
    const [h, w] = inner.shape.slice(-2);
    const rgba = rt._inner.heatmapRgba(inner, opts.colormap ?? 'diverging', lo, hi);
    let err;
    try {
      err = await drawOnGpu(rt, rgba, w, h, canvas, !!opts.overlay);
    } finally {
      release(rgba);
    }
    if (err) throw new PixelgradError(`drawHeatmap: the draw was refused (is the target of another GPUDevice than rt.gpuDevice?): ${err.message}`, { kind: 'deviceMismatch', backend: 'webgpu' });
    rt.report.overlay = { path: 'gpu', reason: 'drawn by a render pass on the device; nothing read back' };
    return;
  }
  if (!canvas || typeof canvas.getContext !== 'function') throw new Error('drawHeatmap: pass an HTMLCanvasElement, an OffscreenCanvas, a WebGPU canvas context or a GPUTexture');
  const img = await rt._inner.heatmapImage(dev(x, rt, 'drawHeatmap'), opts.colormap ?? 'diverging', lo, hi);
  if (rt.backend === 'webgpu') rt.report.overlay = { path: 'readback', reason: 'a 2D canvas: the 8-bit image is read back and put on it' };
  const data = new ImageData(img.pixels, img.width, img.height);
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('drawHeatmap: the canvas has no 2d context (is it already used for WebGL?)');
  if (!opts.overlay) {
    canvas.width = img.width;
    canvas.height = img.height;
    ctx.putImageData(data, 0, 0);
    return;
  }
  const bitmap = await createImageBitmap(data);
  ctx.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
}

/**
 * Draws boxes `[N, 4]` (corners `x1, y1, x2, y2` in the model input's pixels; a pg tensor or an
 * array) on `canvas`: with `geometry` (a fromPixels tensor's) they are mapped back onto the
 * source and scaled to the canvas (`canvas.width` / `geometry.sourceWidth`); `keep` (e.g.
 * nonMaxSuppression's indices, -1 ignored) selects boxes; `labels` names them. Reads only the
 * boxes (and `keep`).
 */
export async function drawBoxes(canvas, boxes, opts = {}) {
  const ctx = canvas && typeof canvas.getContext === 'function' ? canvas.getContext('2d') : null;
  if (!ctx) throw new Error('drawBoxes: pass a canvas with a 2d context');
  const b = boxes instanceof Tensor ? await boxes.data() : Float32Array.from(boxes.flat ? boxes.flat() : boxes);
  if (b.length % 4 !== 0) throw new Error(`drawBoxes: ${b.length} numbers are not whole boxes of 4`);
  let idx = Array.from({ length: b.length / 4 }, (_, i) => i);
  if (opts.keep) idx = Array.from(opts.keep instanceof Tensor ? await opts.keep.data() : opts.keep).filter((i) => i >= 0);
  const g = opts.geometry;
  const sx = g ? canvas.width / g.sourceWidth : 1;
  const sy = g ? canvas.height / g.sourceHeight : 1;
  ctx.save();
  ctx.lineWidth = opts.lineWidth ?? 2;
  ctx.strokeStyle = opts.color ?? '#e4002b';
  ctx.fillStyle = ctx.strokeStyle;
  ctx.font = '12px sans-serif';
  for (const [k, i] of idx.entries()) {
    let box = Array.from(b.subarray(4 * i, 4 * i + 4));
    if (g) box = toSourceBox(box, g);
    const [x0, y0, x1, y1] = [Math.min(box[0], box[2]) * sx, Math.min(box[1], box[3]) * sy, Math.max(box[0], box[2]) * sx, Math.max(box[1], box[3]) * sy];
    ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
    if (opts.labels) ctx.fillText(String(opts.labels[k] ?? opts.labels[i] ?? ''), x0 + 2, y0 + 12);
  }
  ctx.restore();
  return idx.length;
}
