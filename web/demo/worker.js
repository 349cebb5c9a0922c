// The demo's module Web Worker: it owns pixelgrad (the runtime, the data tensors and the model)
// and does all training, prediction and saving, so the page stays responsive while a GPU or
// the CPU backend is busy. The page talks to it with the messages listed in `handlers` below;
// every reply has a `type` (see main.js `onWorkerMessage`).

import * as pg from '../pkg/index.js';
import { buildPreset, buildOptimizer } from './presets.js';
import { softmaxIfLogits, replayIndices } from './util.js';

/** Worker state; everything pixelgrad-owned is disposed before it is replaced. */
const S = {
  rt: null,
  data: null, // { kind, train: {x, y, n}, test: {x, y, n}, imageShape }
  tensors: null, // { conv, xTrain, yTrain, xTest, yTest }
  model: null,
  spec: null, // { preset, optimizer, lr, seed, conv, loss }
  canvas: null, // OffscreenCanvas for the first layer's weights
  hidden: null, // OffscreenCanvas for the first layer's output on a test digit
  training: false,
  pauseRequested: false,
  step: 0, // batches trained with this model, across fit calls (and teaching)
  epoch: 0,
  userSamples: [], // [{ pixels: Float32Array, label }] taught by the user
  maxStepsPerSecond: null, // the speed slider (null: full speed), read by fit before each step
  stepThrough: false, // fit waits in onBatchEnd for a 'step' message
  stepRelease: null, // resolves the wait
};

const post = (msg, transfer) => self.postMessage(msg, transfer || []);
const status = (text) => post({ type: 'status', text });

function postError(err, job) {
  const e = err instanceof Error ? err : new Error(String(err));
  post({ type: 'error', job, message: e.message, stack: e.stack || '' });
}

self.addEventListener('error', (e) => postError(e.error || e.message, 'worker'));
self.addEventListener('unhandledrejection', (e) => postError(e.reason, 'worker (unhandled promise)'));

// ---- network requests made by the worker (its fetches are not in the page's timeline) ----
let netReady = false;
let netCount = 0;
let netUrls = [];
try {
  new PerformanceObserver((list) => {
    if (!netReady) return;
    for (const e of list.getEntries()) {
      netCount += 1;
      netUrls.push(e.name);
    }
    post({ type: 'net', count: netCount, urls: netUrls.slice(-5) });
  }).observe({ type: 'resource', buffered: false });
} catch (e) {
  status(`worker cannot observe resource timing: ${e.message}`);
}

// ---- jobs -------------------------------------------------------------------------------------

function disposeTensors() {
  if (!S.tensors) return;
  for (const k of ['xTrain', 'yTrain', 'xTest', 'yTest']) S.tensors[k]?.dispose();
  S.tensors = null;
}

function disposeModel() {
  S.model?.dispose();
  S.model = null;
}

/** Input tensor shape for `n` samples: [n, h, w, c] for conv models, [n, h*w*c] otherwise. */
function inputShape(n, conv) {
  const [h, w, c] = S.data.imageShape;
  return conv ? [n, h, w, c] : [n, h * w * c];
}

/** (Re)creates the data tensors in the layout the model wants, on the current runtime. */
function ensureTensors(conv) {
  if (S.tensors && S.tensors.conv === conv) return;
  disposeTensors();
  const { train, test } = S.data;
  S.tensors = {
    conv,
    xTrain: pg.tensor(train.x, inputShape(train.n, conv)),
    yTrain: pg.tensor(train.y, [train.n]),
    xTest: pg.tensor(test.x, inputShape(test.n, conv)),
    yTest: pg.tensor(test.y, [test.n]),
  };
}

async function init({ backend, allowSoftware }) {
  if (S.training) throw new Error('pause training before switching backends');
  disposeModel();
  disposeTensors();
  status(`starting backend '${backend}'…`);
  S.rt = await pg.init({ backend, allowSoftware: !!allowSoftware });
  post({ type: 'runtime', backend: S.rt.backend, report: S.rt.report });
}

/** Splits off the last `frac` of a set as the test set (MNIST picked without t10k files). */
function splitTail(set, imageShape, frac) {
  const f = imageShape[0] * imageShape[1] * imageShape[2];
  const nTest = Math.max(1, Math.round(set.n * frac));
  const nTrain = set.n - nTest;
  return {
    train: { x: set.x.subarray(0, nTrain * f), y: set.y.subarray(0, nTrain), n: nTrain },
    test: { x: set.x.subarray(nTrain * f), y: set.y.subarray(nTrain), n: nTest },
  };
}

async function loadData(msg) {
  if (S.training) throw new Error('pause training before changing the data');
  let data;
  if (msg.kind === 'digits') {
    const d = pg.data.digits();
    data = { kind: 'digits', train: d.train, test: d.test, imageShape: d.imageShape };
  } else if (msg.kind === 'mnist') {
    const tr = pg.data.parseMnist(new Uint8Array(msg.trainImages), new Uint8Array(msg.trainLabels));
    let parts;
    if (msg.testImages && msg.testLabels) {
      const te = pg.data.parseMnist(new Uint8Array(msg.testImages), new Uint8Array(msg.testLabels));
      parts = { train: tr, test: te };
    } else {
      parts = splitTail(tr, tr.imageShape, 1 / 7);
    }
    data = { kind: 'mnist', train: parts.train, test: parts.test, imageShape: tr.imageShape };
  } else {
    throw new Error(`unknown data kind '${msg.kind}'`);
  }
  disposeModel();
  disposeTensors();
  S.data = data;
  S.userSamples = [];
  post({ type: 'data', kind: data.kind, nTrain: data.train.n, nTest: data.test.n, imageShape: data.imageShape });
}

function compile(model, spec) {
  model.compile({ optimizer: buildOptimizer(pg, spec.optimizer, spec.lr), loss: spec.loss, metrics: ['accuracy'] });
}

async function build(msg) {
  if (S.training) throw new Error('pause training before building a new model');
  if (!S.data) throw new Error('no data loaded');
  const p = buildPreset(pg, msg.preset, S.data.imageShape, 10);
  const spec = { preset: msg.preset, optimizer: msg.optimizer, lr: Number(msg.lr), seed: msg.seed | 0, conv: p.conv, loss: p.loss };
  const model = pg.sequential(p.layers);
  compile(model, spec);
  disposeModel();
  S.model = model;
  S.spec = spec;
  S.step = 0;
  S.epoch = 0;
  ensureTensors(spec.conv);
  await drawWeights();
  post({ type: 'model', spec, step: 0 });
}

/** Applies new optimizer settings to the current model (Adam's moments start over). */
async function setOptimizer(msg) {
  if (!S.model) throw new Error('no model');
  const spec = { ...S.spec, optimizer: msg.optimizer, lr: Number(msg.lr) };
  compile(S.model, spec);
  S.spec = spec;
  post({ type: 'model', spec, step: S.step });
}

/**
 * Draws the first layer's weights on the worker-owned canvas (on the device where they live).
 * Resolves when drawn; a failure is reported, never thrown, so training goes on.
 */
async function drawWeights() {
  if (!S.canvas || !S.model) return;
  try {
    await S.model.drawWeights(0, S.canvas);
    await drawHidden();
  } catch (e) {
    postError(e, 'drawWeights');
  }
}

/** The first layer's output for the first test digit (the hidden layer, live while training). */
async function drawHidden() {
  if (!S.hidden || !S.model || !S.data) return;
  const shape = S.model.inputShape;
  const per = shape.reduce((a, b) => a * b, 1);
  const x = pg.tensor(S.data.test.x.subarray(0, per), [1, ...shape]);
  try {
    await S.model.drawActivations(x, 0, S.hidden);
  } finally {
    x.dispose();
  }
}

async function train(msg) {
  if (!S.model) throw new Error('no model; press Build first');
  if (S.training) return;
  ensureTensors(S.spec.conv);
  const { xTrain, yTrain, xTest, yTest } = S.tensors;
  const epochs = Math.max(1, msg.epochs | 0);
  const batchSize = Math.max(1, msg.batchSize | 0);
  S.training = true;
  S.pauseRequested = false;
  S.model.stopTraining = false;
  post({ type: 'training', on: true, step: S.step, epoch: S.epoch });
  let stopped = false;
  let base = S.step;
  try {
    // One fit call per epoch, so the epoch count, seed and pause check are the demo's own;
    // fit yields to the event loop between batches, which lets Pause and predictions in.
    for (let e = 0; e < epochs; e++) {
      if (S.pauseRequested) {
        stopped = true;
        break;
      }
      await S.model.fit(xTrain, yTrain, {
        epochs: 1,
        batchSize,
        shuffle: true,
        seed: (S.spec.seed + S.epoch * 7919) >>> 0,
        // a slow speed or step-through shows every step (reads do not change results)
        readEvery: S.maxStepsPerSecond !== null || S.stepThrough ? 1 : 10,
        maxStepsPerSecond: () => S.maxStepsPerSecond ?? undefined,
        validationData: [xTest, yTest],
        // Called after each loss read-back (every `readEvery` batches) with the batch count of
        // this fit call; awaited by fit, so the weights are drawn between batches.
        async onBatchEnd(step, logs) {
          S.step = base + step;
          if (logs && Number.isFinite(logs.loss)) {
            post({ type: 'batch', step: S.step, loss: logs.loss, accuracy: logs.accuracy });
          }
          await drawWeights();
          if (S.stepThrough && !S.pauseRequested) {
            post({ type: 'stepwait', step: S.step });
            await new Promise((resolve) => (S.stepRelease = resolve));
            S.stepRelease = null;
            if (S.stepThrough && !S.pauseRequested) return 'step';
          }
          return undefined;
        },
        onEpochEnd(_epoch, logs) {
          S.epoch += 1;
          post({ type: 'epoch', epoch: S.epoch, step: S.step, logs: { ...logs } });
        },
      });
      base = S.step;
      await new Promise((r) => setTimeout(r, 0));
    }
    if (S.pauseRequested) stopped = true;
    await drawWeights();
    const ev = await S.model.evaluate(xTest, yTest);
    post({ type: 'evaluated', loss: ev.loss, accuracy: ev.accuracy, step: S.step });
  } finally {
    S.training = false;
    S.model.stopTraining = false;
    post({ type: 'training', on: false, stopped, step: S.step, epoch: S.epoch });
  }
}

/** The speed slider and the step-through box (they bypass the queue, like pause). */
function setPace(msg) {
  S.maxStepsPerSecond = typeof msg.maxStepsPerSecond === 'number' && msg.maxStepsPerSecond > 0 ? msg.maxStepsPerSecond : null;
  S.stepThrough = !!msg.stepThrough;
  if (!S.stepThrough && S.stepRelease) S.stepRelease();
}

/** The Step button: fit, waiting in onBatchEnd in step-through mode, runs one more step. */
function stepOnce() {
  if (S.stepRelease) S.stepRelease();
}

async function crossCheck() {
  if (!S.rt) throw new Error('no backend; press Restart on this backend');
  status(`cross-checking ${S.rt.backend} against the CPU in f64…`);
  const report = await S.rt.crossCheck({ layers: [4, 4, 2], steps: 3 });
  post({ type: 'crosscheck', report });
  status(report.summary);
}

function layouts() {
  if (!S.model) throw new Error('no model; press New model first');
  post({ type: 'layouts', rows: S.model.layouts() });
}

function pause() {
  if (!S.training) return;
  S.pauseRequested = true;
  if (S.stepRelease) S.stepRelease();
  if (S.model) S.model.stopTraining = true;
  status('pausing after the current batch…');
}

/** Class probabilities for one image (`pixels` in the data's layout and scale). */
async function probabilities(pixels) {
  const x = pg.tensor(pixels, inputShape(1, S.spec.conv));
  let out;
  try {
    out = S.model.predict(x);
    return softmaxIfLogits(await out.data());
  } finally {
    out?.dispose();
    x.dispose();
  }
}

async function predict(msg) {
  if (!S.model) throw new Error('no model');
  const probs = await probabilities(msg.pixels);
  post({ type: 'prediction', id: msg.id, probs: Array.from(probs) });
}

/**
 * Personalisation: fine-tunes on every sample the user taught so far (repeated so they weigh
 * in) mixed with a few replayed training samples (so the model does not forget the data set),
 * for a few full-batch steps, then predicts the new drawing again.
 */
async function teach(msg) {
  if (!S.model) throw new Error('no model');
  if (S.training) throw new Error('pause training before teaching');
  const label = msg.label | 0;
  if (label < 0 || label > 9) throw new Error(`label must be 0..9, got ${msg.label}`);
  S.userSamples.push({ pixels: new Float32Array(msg.pixels), label });
  const f = msg.pixels.length;
  // Tried on digits (mlp, 97% test accuracy, a drawn 7 taught as another digit): 8 copies +
  // 128 replayed samples for 20 full-batch steps flip the prediction in one Teach and keep the
  // test accuracy; with 24 replayed samples it fell to ~90%.
  const repeats = 8;
  const replay = 128;
  const { train } = S.data;
  const idx = replayIndices(train.n, replay, S.step + S.userSamples.length);
  const n = S.userSamples.length * repeats + idx.length;
  const xs = new Float32Array(n * f);
  const ys = new Int32Array(n);
  let row = 0;
  for (const s of S.userSamples) {
    for (let r = 0; r < repeats; r++, row++) {
      xs.set(s.pixels, row * f);
      ys[row] = s.label;
    }
  }
  for (const i of idx) {
    xs.set(train.x.subarray(i * f, (i + 1) * f), row * f);
    ys[row++] = train.y[i];
  }
  const x = pg.tensor(xs, inputShape(n, S.spec.conv));
  const y = pg.tensor(ys, [n]);
  const base = S.step;
  try {
    await S.model.fit(x, y, {
      epochs: 20,
      batchSize: n,
      shuffle: true,
      seed: (S.spec.seed + S.step) >>> 0,
      readEvery: 1,
      onBatchEnd(step) {
        S.step = base + step;
      },
    });
  } finally {
    x.dispose();
    y.dispose();
  }
  await drawWeights();
  const probs = await probabilities(msg.pixels);
  post({ type: 'taught', samples: S.userSamples.length, label, step: S.step });
  post({ type: 'prediction', id: msg.id, probs: Array.from(probs) });
  // The test score shows what personalisation cost on the data set (replay keeps it small).
  const ev = await S.model.evaluate(S.tensors.xTest, S.tensors.yTest);
  post({ type: 'evaluated', loss: ev.loss, accuracy: ev.accuracy, step: S.step });
}

async function save(msg) {
  if (!S.model) throw new Error('no model');
  await S.model.save(`indexeddb://${msg.name}`);
  post({ type: 'saved', name: msg.name, meta: { spec: S.spec, dataKind: S.data.kind, imageShape: S.data.imageShape, step: S.step } });
}

async function load(msg) {
  if (S.training) throw new Error('pause training before loading');
  const meta = msg.meta;
  if (!meta || !meta.spec) throw new Error(`nothing saved under '${msg.name}' by this demo`);
  if (meta.dataKind !== S.data.kind) {
    throw new Error(`the saved model was trained on ${meta.dataKind}; load that data first (now: ${S.data.kind})`);
  }
  const model = await pg.loadModel(`indexeddb://${msg.name}`);
  compile(model, meta.spec);
  disposeModel();
  S.model = model;
  S.spec = meta.spec;
  S.step = meta.step | 0;
  S.epoch = 0;
  ensureTensors(S.spec.conv);
  await drawWeights();
  const ev = await S.model.evaluate(S.tensors.xTest, S.tensors.yTest);
  post({ type: 'model', spec: S.spec, step: S.step, loaded: msg.name });
  post({ type: 'evaluated', loss: ev.loss, accuracy: ev.accuracy, step: S.step });
}

async function setCanvas(msg) {
  if (msg.hidden) S.hidden = msg.hidden;
  if (msg.canvas) S.canvas = msg.canvas;
  await drawWeights();
}

/** The page says it has finished loading: from now on every fetch counts. */
function markReady() {
  netReady = true;
  netCount = 0;
  netUrls = [];
  post({ type: 'net', count: 0, urls: [] });
}

const handlers = { init, data: loadData, build, optimizer: setOptimizer, train, predict, teach, save, load, canvas: setCanvas, ready: markReady, crosscheck: crossCheck, layouts };

// Jobs run one at a time in arrival order (a model must not be rebuilt under a running fit).
// Pause and predictions during training bypass the queue so they take effect at once: fit
// yields to the event loop after every batch, and a prediction is an inference-mode forward
// pass that leaves the training state alone (the page keeps at most one in flight).
let queue = Promise.resolve();
self.onmessage = (ev) => {
  const msg = ev.data || {};
  if (msg.type === 'pause') return pause();
  if (msg.type === 'pace') return setPace(msg);
  if (msg.type === 'step') return stepOnce();
  if (msg.type === 'predict' && S.training) {
    predict(msg).catch((e) => postError(e, 'predict'));
    return;
  }
  const fn = handlers[msg.type];
  if (!fn) return postError(new Error(`unknown message '${msg.type}'`), msg.type);
  queue = queue.then(async () => {
    post({ type: 'busy', job: msg.type, on: true });
    try {
      await fn(msg);
    } catch (e) {
      postError(e, msg.type);
    } finally {
      post({ type: 'busy', job: msg.type, on: false });
    }
  });
};

post({ type: 'hello', version: pg.version ?? null });
