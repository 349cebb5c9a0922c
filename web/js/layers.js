// Layer and optimizer constructors: plain config objects (what the Rust side builds from and
// what a save stores), named as in TF.js.

function cfg(type, c, what) {
  if (c !== undefined && (c === null || typeof c !== 'object' || Array.isArray(c))) {
    throw new Error(`layers.${what}: expects an options object, got ${JSON.stringify(c)}`);
  }
  return Object.freeze({ type, ...(c || {}) });
}

/**
 * Layer configs for `pg.sequential`. Image inputs are NHWC: `inputShape: [h, w, c]`. Every layer
 * takes `trainable: false` to freeze its weights (no updates; still saved).
 */
export const layers = Object.freeze({
  /** Fully connected: `{ units, activation?, inputShape? }`. */
  dense: (c) => cfg('dense', c, 'dense'),
  /** 2-D convolution: `{ filters, kernelSize, strides?, padding?: 'valid'|'same', activation?, inputShape? }`. */
  conv2d: (c) => cfg('conv2d', c, 'conv2d'),
  /** Max pooling: `{ poolSize?: 2, strides? }`. */
  maxPooling2d: (c) => cfg('maxPooling2d', c, 'maxPooling2d'),
  /** Flattens `[h, w, c]` to a vector. */
  flatten: (c) => cfg('flatten', c, 'flatten'),
  /** Inverted dropout in training: `{ rate }`. */
  dropout: (c) => cfg('dropout', c, 'dropout'),
  /** Batch normalisation over features or channels. */
  batchNormalization: (c) => cfg('batchNormalization', c, 'batchNormalization'),
  /** An activation on its own: `{ activation }`. */
  activation: (c) => cfg('activation', c, 'activation'),
  /**
   * Token embedding (Keras `Embedding`): token ids `[seq]` (whole numbers below `inputDim`, as
   * float32) become `[seq, outputDim]`: `{ inputDim, outputDim, inputShape?: [seq] }`.
   */
  embedding: (c) => cfg('embedding', c, 'embedding'),
  /** Learned positions added to a sequence `[seq, width]` (keras-hub): `{ sequenceLength }` (at least `seq`). */
  positionEmbedding: (c) => cfg('positionEmbedding', c, 'positionEmbedding'),
  /** Layer normalisation over the last axis: `{ epsilon?: 1e-3 }`. */
  layerNormalization: (c) => cfg('layerNormalization', c, 'layerNormalization'),
  /** RMS normalisation over the last axis: `{ epsilon?: 1e-6 }`. */
  rmsNormalization: (c) => cfg('rmsNormalization', c, 'rmsNormalization'),
  /**
   * Self-attention over a sequence `[seq, width]`, projected back to `width`: `{ numHeads,
   * numKeyValueHeads?, keyDim?, useBias?: true, useCausalMask?: false, rotaryMaxWavelength?,
   * dropout?: 0 }`.
   */
  multiHeadAttention: (c) => cfg('multiHeadAttention', c, 'multiHeadAttention'),
  /**
   * A pre-norm transformer block over `[seq, width]`: `{ numHeads, intermediateDim,
   * numKeyValueHeads?, activation?: 'gelu'|'swiglu', normalization?: 'layerNormalization'|
   * 'rmsNormalization', epsilon?: 1e-5, dropout?: 0, useCausalMask?: true, rotaryMaxWavelength? }`.
   */
  transformerBlock: (c) => cfg('transformerBlock', c, 'transformerBlock'),
  /**
   * An imported ONNX model (or its part up to the value `output`) as a layer:
   * `{ model: await pg.loadOnnx(...), output?, input?, inputShape?, trainable?, activation? }`.
   * Image inputs reach it as NCHW, as ONNX models expect.
   */
  onnx: (c) => cfg('onnx', c, 'onnx'),
});

function lrOf(lr, name) {
  if (lr === undefined) return 1e-3;
  if (typeof lr !== 'number' || !(lr > 0) || !Number.isFinite(lr)) {
    throw new Error(`optimizers.${name}: learning rate must be a positive number, got ${lr}`);
  }
  return lr;
}

/**
 * Optimizer configs for `model.compile`. The names are the engine's (`OptimizerKind::parse`
 * in pixelgrad-nn, the CLI's `--optimizer`): `momentum` and `nesterov` are SGD with momentum
 * 0.9 (plain or Nesterov), `adamw` is Adam with decoupled weight decay 0.01.
 */
export const optimizers = Object.freeze({
  adam: (learningRate) => Object.freeze({ name: 'adam', learningRate: lrOf(learningRate, 'adam') }),
  adamw: (learningRate) => Object.freeze({ name: 'adamw', learningRate: lrOf(learningRate, 'adamw') }),
  sgd: (learningRate, momentum = 0) => Object.freeze({ name: 'sgd', learningRate: lrOf(learningRate, 'sgd'), momentum }),
  momentum: (learningRate) => Object.freeze({ name: 'momentum', learningRate: lrOf(learningRate, 'momentum') }),
  nesterov: (learningRate) => Object.freeze({ name: 'nesterov', learningRate: lrOf(learningRate, 'nesterov') }),
  rmsprop: (learningRate) => Object.freeze({ name: 'rmsprop', learningRate: lrOf(learningRate, 'rmsprop') }),
});
