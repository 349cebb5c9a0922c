// Post-processing on the device: ranking, suppression and upsampling of a model's outputs
// without reading them back (the engine's composites; only the small result is read when
// asked). Inputs are pg tensors (host tensors are uploaded once); results live on the device.
import { currentRuntime } from './runtime.js';
import { Tensor, deviceTensor } from './tensor.js';

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
