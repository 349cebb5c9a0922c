// pixelgrad: train neural networks in the browser on WebGPU, WebGL2 or the CPU.
//
//   import * as pg from 'pixelgrad';
//   const rt = await pg.init({ backend: 'auto' });
//   const model = pg.sequential([pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }),
//                                pg.layers.dense({ units: 10 })]);
//   model.compile({ optimizer: pg.optimizers.adam(1e-3), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
//   await model.fit(pg.tensor(x, [n, 64]), pg.tensor(y, [n]), { epochs: 5, batchSize: 32 });
//
// This file is the package entry; the wasm-bindgen output (pixelgrad_web.js + .wasm) sits next
// to it and is an implementation detail.
import { currentRuntime, init as initImpl, loadWasm as loadWasmImpl, wasm, wasmLoaded, Runtime } from './runtime.js';
import { PixelgradError } from './errors.js';
import { refuseNextSyncInstance } from './instance.js';
import { guard, guardClass, guardObject } from './guard.js';
import { Tensor, deviceTensor, tensor as tensorImpl } from './tensor.js';
import { Sequential, sequential as sequentialImpl, loadModel as loadModelImpl, listModels as listImpl, removeModel as removeImpl } from './model.js';
import { layers as layersImpl, optimizers as optimizersImpl } from './layers.js';
import { OnnxModel, inspectOnnx as inspectOnnxImpl, loadOnnx as loadOnnxImpl } from './onnx.js';
import { flower as flowerImpl } from './flower.js';
import * as image from './image.js';
import * as post from './post.js';
import { fromGPUBuffer as fromGPUBufferImpl } from './interop.js';
import { fromTexture as fromTextureImpl } from './fromtexture.js';
import { Tokenizer, tokenizer as tokenizerImpl } from './tokenizer.js';

// Every error the public API throws or rejects with is a PixelgradError (errors.js).
[Runtime, Tensor, Sequential, OnnxModel, Tokenizer].forEach(guardClass);
// Each export is typed as index.d.ts declares it (`tsc -p web/tsconfig.json` checks the
// implementation against those declarations; the classes do so with `@implements`).
/** @typedef {typeof import('./index.js')} Api */
/** @type {Api['init']} */
export const init = guard(initImpl);
/** @type {Api['tensor']} */
export const tensor = guard(tensorImpl);
/** @type {Api['sequential']} */
export const sequential = guard(sequentialImpl);
/** @type {Api['loadModel']} */
export const loadModel = guard(loadModelImpl);
/** @type {Api['listModels']} */
export const listModels = guard(listImpl);
/** @type {Api['removeModel']} */
export const removeModel = guard(removeImpl);
/** @type {Api['loadOnnx']} */
export const loadOnnx = guard(loadOnnxImpl);
/** @type {Api['inspectOnnx']} */
export const inspectOnnx = guard(inspectOnnxImpl);
/** @type {Api['tokenizer']} */
export const tokenizer = guard(tokenizerImpl);
/** @type {Api['loadWasm']} */
export const loadWasm = guard(loadWasmImpl);
/** @type {Api['layers']} */
export const layers = guardObject(layersImpl);
/** @type {Api['optimizers']} */
export const optimizers = guardObject(optimizersImpl);
/** @type {Api['flower']} */
export const flower = guardObject(flowerImpl);
/** @type {Api['fromPixels']} */
export const fromPixels = guard(image.fromPixels);
/** @type {Api['toSourceBox']} */
export const toSourceBox = guard(image.toSourceBox);
/** @type {Api['fromYUV']} */
export const fromYUV = guard(image.fromYUV);
/** @type {Api['fromPixelsAsync']} */
export const fromPixelsAsync = guard(image.fromPixelsAsync);
/** @type {Api['fromGPUBuffer']} */
export const fromGPUBuffer = guard(fromGPUBufferImpl);
/** @type {Api['fromTexture']} */
export const fromTexture = guard(fromTextureImpl);
const postOps = guardObject(post);
/** @type {Api['topk']} */
export const topk = postOps.topk;
/** @type {Api['softmax']} */
export const softmax = postOps.softmax;
/** @type {Api['concat']} */
export const concat = postOps.concat;
/** @type {Api['nonMaxSuppression']} */
export const nonMaxSuppression = postOps.nonMaxSuppression;
/** @type {Api['resizeBilinear']} */
export const resizeBilinear = postOps.resizeBilinear;
/** @type {Api['drawHeatmap']} */
export const drawHeatmap = postOps.drawHeatmap;
/** @type {Api['drawBoxes']} */
export const drawBoxes = postOps.drawBoxes;
export { PixelgradError, Runtime, Tensor, Sequential, OnnxModel, Tokenizer };
/** The package version (package.json's, stamped from the Rust workspace by `cargo xtask build-wasm`). */
export { version } from './version.js';

/**
 * Matrix product `a @ b` on the current runtime's device: `[m, k] x [k, n]` or batched
 * `[b, m, k] x [b, k, n]`. Host tensors (`pg.tensor`) are uploaded once and stay on the device
 * for later calls; the result lives on the device (read it with `await c.data()`).
 * @type {Api['matmul']}
 */
export const matmul = guard(function matmul(a, b) {
  const rt = currentRuntime('matmul');
  if (!(a instanceof Tensor) || !(b instanceof Tensor)) throw new Error('matmul: both arguments must be pg tensors');
  return deviceTensor(rt._inner.matmul(a._onDevice(rt, 'matmul'), b._onDevice(rt, 'matmul')), rt);
});

/**
 * Test-only (not part of the API; it stays in every build because the tests run the shipped
 * package): panics inside the wasm module with `message`, as a bug would, to prove that the
 * crash surfaces as a PixelgradError of kind 'panic' and that the next call runs on a fresh
 * instance. `{ async: true }`: the panic happens inside an asynchronous Rust call (the
 * returned promise rejects with kind 'panic' instead of never settling). `{ refuseSyncInstance:
 * true }`: the fresh instance cannot be made synchronously, as for a module over Chrome's 8 MiB
 * limit (instance.js), so it is made asynchronously.
 * @type {Api['__testPanic']}
 */
export const __testPanic = guard(function __testPanic(message = 'test panic', opts = {}) {
  needWasm('__testPanic');
  if (opts.refuseSyncInstance) refuseNextSyncInstance();
  if (opts.async) return wasm.__testPanicAsync(String(message));
  return wasm.__testPanic(String(message));
});

/**
 * The current runtime (after `init`), or null.
 * @returns {import('./index.js').Runtime | null}
 */
export function runtime() {
  try {
    return currentRuntime('runtime');
  } catch {
    return null;
  }
}

function needWasm(what) {
  // The data helpers need the module but no backend.
  if (!wasmLoaded()) throw new Error(`${what}: call \`await pg.init()\` (or \`await pg.loadWasm()\`) first`);
}

/**
 * Data sets and parsers.
 * @type {Api['data']}
 */
export const data = guardObject({
  /**
   * The embedded 8x8 digits set (1,797 images, pixels in [0, 1]) split 80/20:
   * `{ train: { x, y, n }, test: { x, y, n }, inputShape: [64], imageShape: [8, 8, 1], classes: 10 }`.
   */
  digits() {
    needWasm('data.digits');
    return wasm.digits();
  },
  /** MNIST IDX files (gzipped or not) → `{ x: Float32Array (in [0, 1]), y: Int32Array, n, imageShape: [28, 28, 1] }`. */
  parseMnist(imagesBytes, labelsBytes) {
    needWasm('data.parseMnist');
    const u8 = (b, what) => {
      if (b instanceof Uint8Array) return b;
      if (b instanceof ArrayBuffer) return new Uint8Array(b);
      throw new Error(`data.parseMnist: ${what} must be a Uint8Array or ArrayBuffer`);
    };
    return wasm.parseMnist(u8(imagesBytes, 'imagesBytes'), u8(labelsBytes, 'labelsBytes'));
  },
});
