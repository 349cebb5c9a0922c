// Model presets of the demo, written with pixelgrad's layers API and sized for the chosen data.
// They mirror the Rust presets (crates/pixelgrad-nn/src/presets.rs): seed-mlp is the seed
// article's small sigmoid network, mlp one ReLU hidden layer, cnn two conv + pool blocks.

/** Preset names in the order the picker shows them. */
export const PRESETS = ['seed-mlp', 'mlp', 'cnn'];

/**
 * Builds the layers of `preset` for images of `imageShape` ([h, w, c]) and `classes` outputs.
 * Returns `{ layers, loss, conv }`; `conv` says whether inputs are [n, h, w, c] (else [n, h*w*c]).
 */
export function buildPreset(pg, preset, imageShape, classes = 10) {
  const [h, w, c] = imageShape;
  const features = h * w * c;
  const L = pg.layers;
  switch (preset) {
    case 'seed-mlp':
      // The seed article's 64 sigmoid hidden units; its MSE loss on 10 sigmoid outputs against
      // one-hot targets would learn slowly at a demo's pace, so the output is softmax + CE.
      return {
        conv: false,
        loss: 'softmaxCrossEntropy',
        layers: [L.dense({ units: 64, inputShape: [features], activation: 'sigmoid' }), L.dense({ units: classes })],
      };
    case 'mlp':
      return {
        conv: false,
        loss: 'softmaxCrossEntropy',
        layers: [L.dense({ units: 128, inputShape: [features], activation: 'relu' }), L.dense({ units: classes })],
      };
    case 'cnn': {
      // Two "same" 3x3 convs with 2x2 pooling: 8x8 -> 4x4 -> 2x2 for digits, 28 -> 14 -> 7 for MNIST.
      const small = h <= 8;
      return {
        conv: true,
        loss: 'softmaxCrossEntropy',
        layers: [
          L.conv2d({ filters: small ? 8 : 16, kernelSize: 3, padding: 'same', activation: 'relu', inputShape: [h, w, c] }),
          L.maxPooling2d({ poolSize: 2 }),
          L.conv2d({ filters: small ? 16 : 32, kernelSize: 3, padding: 'same', activation: 'relu' }),
          L.maxPooling2d({ poolSize: 2 }),
          L.flatten(),
          L.dense({ units: classes }),
        ],
      };
    }
    default:
      throw new Error(`unknown model preset '${preset}' (${PRESETS.join(', ')})`);
  }
}

/** `pg.optimizers.<name>(lr)`; pixelgrad itself rejects bad rates when the model compiles. */
export function buildOptimizer(pg, name, lr) {
  const make = pg.optimizers[name];
  if (typeof make !== 'function') throw new Error(`unknown optimizer '${name}' (adam, sgd)`);
  return make(lr);
}
