// The benchmark workloads, defined once and shared by the pixelgrad and TF.js sides so both
// train the same model on the same data from the same initial weights. Runs in the page.

/** Seeded PRNG (mulberry32): the same stream in every browser, so both libraries see equal data. */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` floats uniform in [lo, hi). */
export function uniform(n, seed, lo = 0, hi = 1) {
  const r = rng(seed);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * r();
  return a;
}

/**
 * Layer specs in library-neutral form. `batchesPerEpoch` is 50 everywhere so an epoch of
 * pixelgrad's fit (which reads the loss back at each epoch's end) matches the 50-step readback
 * interval of both sides. `inputShape` is per sample (NHWC for images); conv and
 * pooling use 'valid' padding and stride 1 (conv) / poolSize (pool), as both libraries default.
 */
export const trainWorkloads = {
  'seed-mlp': {
    title: 'seed-mlp 48-64-2, sigmoid, MSE, SGD lr 0.5, batch 1',
    inputShape: [48],
    classes: 2,
    layers: [
      { type: 'dense', units: 64, activation: 'sigmoid' },
      { type: 'dense', units: 2, activation: 'sigmoid' },
    ],
    loss: 'meanSquaredError',
    lr: 0.5,
    batch: 1,
    batchesPerEpoch: 50,
  },
  'mnist-mlp': {
    title: 'mnist-mlp 784-128-10, relu, softmax cross-entropy, SGD lr 0.1, batch 64 (random data)',
    inputShape: [784],
    classes: 10,
    layers: [
      { type: 'dense', units: 128, activation: 'relu' },
      { type: 'dense', units: 10, activation: 'linear' },
    ],
    loss: 'softmaxCrossEntropy',
    lr: 0.1,
    batch: 64,
    batchesPerEpoch: 50,
  },
  cnn: {
    title: 'cnn 28x28x1, conv3x3x8 relu, maxpool 2, conv3x3x16 relu, maxpool 2, dense 10, cross-entropy, SGD lr 0.05, batch 32 (random data)',
    inputShape: [28, 28, 1],
    classes: 10,
    layers: [
      { type: 'conv2d', filters: 8, kernelSize: 3, activation: 'relu' },
      { type: 'maxPooling2d', poolSize: 2 },
      { type: 'conv2d', filters: 16, kernelSize: 3, activation: 'relu' },
      { type: 'maxPooling2d', poolSize: 2 },
      { type: 'flatten' },
      { type: 'dense', units: 10, activation: 'linear' },
    ],
    loss: 'softmaxCrossEntropy',
    lr: 0.05,
    batch: 32,
    batchesPerEpoch: 50,
  },
};

/** Matmul workloads: n x n times n x n, inputs resident on the device. */
export const matmulWorkloads = { 'matmul-256': 256, 'matmul-512': 512, 'matmul-1024': 1024 };

/**
 * Scale of B's uniform entries in the matmul chain c <- c·B: B's eigenvalues then lie in a
 * disk of radius about 1.05 (circular law: sqrt(n · scale² / 3)), so values grow slowly to
 * inf and NaN rather than shrinking into subnormals, which run far slower on CPUs.
 */
export function chainScale(n) {
  return 1.05 * Math.sqrt(3 / n);
}

/** Every workload name, in report order. */
export const workloadNames = [...Object.keys(trainWorkloads), ...Object.keys(matmulWorkloads)];

/**
 * Walks the layer list and returns, per layer, the shapes of its weights in TF.js order
 * (dense kernel [in, out], conv kernel [kh, kw, cin, cout], then bias [out]).
 */
export function weightShapes(w) {
  let shape = [...w.inputShape];
  let flattenedFrom = null; // [h, w, c] when the current flat shape came from an image
  const out = [];
  for (const l of w.layers) {
    if (l.type === 'dense') {
      const fanIn = shape.reduce((a, b) => a * b, 1);
      out.push({ kernel: [fanIn, l.units], bias: [l.units], fanIn, fanOut: l.units, flattenedFrom });
      shape = [l.units];
      flattenedFrom = null;
    } else if (l.type === 'conv2d') {
      const [h, wd, c] = shape;
      const k = l.kernelSize;
      out.push({ kernel: [k, k, c, l.filters], bias: [l.filters], fanIn: k * k * c, fanOut: k * k * l.filters });
      shape = [h - k + 1, wd - k + 1, l.filters];
    } else if (l.type === 'maxPooling2d') {
      const p = l.poolSize;
      shape = [Math.floor(shape[0] / p), Math.floor(shape[1] / p), shape[2]];
      out.push(null);
    } else if (l.type === 'flatten') {
      if (shape.length === 3) flattenedFrom = [...shape];
      shape = [shape.reduce((a, b) => a * b, 1)];
      out.push(null);
    }
  }
  return out;
}

/**
 * Initial weights (Glorot uniform kernels, zero biases) from a fixed seed, per layer in
 * TF.js layout; `null` for layers without weights.
 */
export function initialWeights(w, seed = 7) {
  return weightShapes(w).map((s, i) => {
    if (!s) return null;
    const limit = Math.sqrt(6 / (s.fanIn + s.fanOut));
    const n = s.kernel.reduce((a, b) => a * b, 1);
    return {
      kernel: { data: uniform(n, seed * 1000 + i, -limit, limit), shape: s.kernel },
      bias: { data: new Float32Array(s.bias[0]), shape: s.bias },
      flattenedFrom: s.flattenedFrom ?? null,
    };
  });
}

/**
 * A kernel from TF.js layout to pixelgrad's: conv [kh, kw, cin, cout] → [cout, cin, kh, kw];
 * a dense kernel after flattening an image has its rows reordered from TF.js's (y, x, c)
 * flatten order to pixelgrad's (c, y, x) (pixelgrad runs convolutions in NCHW). Dense
 * kernels are [in, out] in both.
 */
export function toPixelgradKernel(k, flattenedFrom) {
  const d = k.data;
  if (k.shape.length === 4) {
    const [kh, kw, ci, co] = k.shape;
    const o = new Float32Array(d.length);
    for (let y = 0; y < kh; y++)
      for (let x = 0; x < kw; x++)
        for (let c = 0; c < ci; c++)
          for (let f = 0; f < co; f++) o[((f * ci + c) * kh + y) * kw + x] = d[((y * kw + x) * ci + c) * co + f];
    return { data: o, shape: [co, ci, kh, kw] };
  }
  if (flattenedFrom) {
    const [h, w, c] = flattenedFrom;
    const units = k.shape[1];
    const o = new Float32Array(d.length);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++)
        for (let ch = 0; ch < c; ch++) {
          const from = ((y * w + x) * c + ch) * units;
          const to = ((ch * h + y) * w + x) * units;
          o.set(d.subarray(from, from + units), to);
        }
    return { data: o, shape: k.shape };
  }
  return k;
}

/**
 * The training data: `batch * batchesPerEpoch` samples, inputs uniform in [0, 1), labels
 * i mod classes shuffled by the seed. Returns inputs, integer labels and one-hot labels.
 */
export function trainingData(w, seed = 9) {
  const n = w.batch * w.batchesPerEpoch;
  const per = w.inputShape.reduce((a, b) => a * b, 1);
  const x = uniform(n * per, seed);
  const r = rng(seed + 1);
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) labels[i] = Math.floor(r() * w.classes);
  const onehot = new Float32Array(n * w.classes);
  for (let i = 0; i < n; i++) onehot[i * w.classes + labels[i]] = 1;
  return { n, x, xShape: [n, ...w.inputShape], labels, onehot };
}
