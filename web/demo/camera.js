// Camera demo: live classification of webcam frames and a *teach* mode, all in the page.
//
// Each frame: pg.fromPixels(video) resizes, crops and normalises on the device (WebGPU compute
// pass / WebGL2 fragment pass / CPU), the model runs on the device, and only the top-k (or the
// K class probabilities) are read back. Per-stage times are wall-clock times of the calls
// (preprocess and inference only queue GPU work; "read" waits for it).
//
// Teach: K classes recorded from the camera; a new dense head is trained by model.fit in a
// worker (camera-worker.js, its own runtime on the same backend). Each recorded frame goes to
// the worker as a VideoFrame; there fromPixels and the frozen backbone (the loaded ONNX model
// as a non-trainable pg.layers.onnx, or none: the downsampled frame itself) run once and the
// features stay on the worker's device (no readback per sample); fit trains on them joined on
// the device and reads back only the periodic loss. The page sets the trained weights on its
// copy of the head. The personalised model saves to IndexedDB
// and exports as a download. Nothing leaves the page: the request counter stays at 0 after
// load. `window.cameraDemo` exposes the same actions for tests.
import * as pg from '../pkg/index.js';
import { watchNetwork } from './netwatch.js';
import { headLayers, pageWeights } from './camera-head.js';

const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);
const net = watchNetwork($('net'));
const status = (t) => {
  $('status').textContent = t;
};
const nums = (s, d) => (s ? s.split(',').map(Number) : d);
const MEAN = nums(params.get('mean'), [0.485, 0.456, 0.406]);
const STD = nums(params.get('std'), [0.229, 0.224, 0.225]);
/** Side of the frame a head without backbone sees. */
const SIDE = Number(params.get('side') || 16);

const state = {
  video: $('video'),
  onnx: null, // { model, size: [h, w] }
  classes: [],
  samples: [], // { id, y }: the sample's features live on the trainer's device
  head: null,
  recording: -1,
  training: false,
  stats: { frames: 0, fps: 0, preprocess: 0, inference: 0, read: 0 },
  last: null,
};

function teachInput() {
  // pg.sequential takes NHWC and hands an onnx layer NCHW when the ONNX model wants it.
  if (state.onnx) return { size: state.onnx.size, layout: 'nhwc', mean: MEAN, std: STD };
  return { size: [SIDE, SIDE], layout: 'nhwc', fit: 'cover' };
}

function renderClasses() {
  const box = $('classes');
  box.replaceChildren();
  state.classes.forEach((c, k) => {
    const row = document.createElement('div');
    row.className = 'field';
    const b = document.createElement('button');
    b.textContent = state.recording === k ? `■ stop (${c.name})` : `● record ${c.name}`;
    b.dataset.class = String(k);
    b.onclick = () => {
      state.recording = state.recording === k ? -1 : k;
      renderClasses();
    };
    const n = document.createElement('span');
    n.className = 'muted';
    n.textContent = ` ${state.samples.filter((s) => s.y === k).length} samples`;
    row.append(b, n);
    box.append(row);
  });
  const counts = state.classes.map((_, k) => state.samples.filter((s) => s.y === k).length);
  $('train').disabled = state.training || counts.length < 2 || counts.some((n) => n === 0);
}

function addClass() {
  state.classes.push({ name: `class ${state.classes.length}` });
  renderClasses();
}

let nextSample = 0;
/** Records the current frame as a sample of class `y` (the worker keeps its features). */
async function addSample(y) {
  const id = nextSample++;
  const frame = new VideoFrame(state.video);
  state.samples.push({ id, y });
  renderClasses();
  await ask({ type: 'sample', id, y, frame, input: teachInput() }, [frame], 'sample');
}

function buildHead() {
  const m = pg.sequential(headLayers(pg, state.onnx && state.onnx.model, [...teachInput().size, 3], state.classes.length), { seed: 1 });
  m.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
  return m;
}

/** Messages to the trainer worker, one reply (`seq` echoed) each. */
let trainer = null;
let seq = 0;
function ask(msg, transfer, want) {
  const mine = ++seq;
  return new Promise((resolve, reject) => {
    const on = ({ data }) => {
      if (data.type === 'epoch') {
        $('teach-status').textContent = `epoch ${data.epoch + 1}: loss ${data.logs.loss.toFixed(3)}, accuracy ${(100 * data.logs.accuracy).toFixed(1)}%`;
        return;
      }
      if (data.seq !== mine) return;
      trainer.removeEventListener('message', on);
      if (data.type === 'error') reject(new Error(`trainer (${data.job}): ${data.message}`));
      else if (data.type === want) resolve(data);
      else reject(new Error(`trainer: unexpected ${data.type}`));
    };
    trainer.addEventListener('message', on);
    trainer.postMessage({ ...msg, seq: mine }, transfer || []);
  });
}

/** Trains a new head on the recorded samples in the worker, then takes its weights. */
async function train(opts = {}) {
  if (state.training) throw new Error('already training');
  state.training = true;
  renderClasses();
  try {
    const ids = state.samples.map((s) => s.id);
    const shape = [...teachInput().size, 3];
    const r = await ask({ type: 'train', ids, shape, classes: state.classes.length, epochs: opts.epochs ?? 30 }, [], 'trained');
    const head = buildHead();
    await head.setWeights(pageWeights(r.weights, head.weightInfo()));
    if (state.head) state.head.dispose();
    state.head = head;
    ['save', 'export'].forEach((b) => ($(b).disabled = false));
    return r.history;
  } finally {
    state.training = false;
    renderClasses();
  }
}

/** Class probabilities of the current frame under the taught head. */
async function predictNow() {
  if (!state.head) return null;
  const t = pg.fromPixels(state.video, teachInput());
  const p = pg.softmax(state.head.predict(t));
  const v = await p.data();
  t.dispose();
  p.dispose();
  return Array.from(v);
}

async function classify() {
  const { model, size, input, layout, channels } = state.onnx;
  const t0 = performance.now();
  const norm = channels === 1 ? { mean: MEAN[0], std: STD[0] } : { mean: MEAN, std: STD };
  const x = pg.fromPixels(state.video, { size, fit: 'cover', layout, channels, ...norm });
  const t1 = performance.now();
  const out = await model.run({ [input]: x });
  const logits = Object.values(out)[0];
  const t2 = performance.now();
  const flat = logits.shape[logits.shape.length - 1];
  const { values, indices } = pg.topk(pg.softmax(logits), Math.min(3, flat));
  const [v, i] = await Promise.all([values.data(), indices.data()]);
  const t3 = performance.now();
  [x, logits, values, indices].forEach((t) => t.dispose());
  $('top').replaceChildren(
    ...Array.from(i, (c, k) => {
      const li = document.createElement('li');
      li.textContent = `class ${c}: ${(100 * v[k]).toFixed(1)}%`;
      return li;
    }),
  );
  return [t1 - t0, t2 - t1, t3 - t2];
}

async function loop() {
  let last = performance.now();
  for (;;) {
    await new Promise((r) => requestAnimationFrame(r));
    // Training runs in the worker: frames keep being classified meanwhile.
    if (state.video.readyState < 2) continue;
    try {
      let times = [0, 0, 0];
      if (state.recording >= 0) await addSample(state.recording);
      if (state.onnx) times = await classify();
      if (state.head) {
        const p = await predictNow();
        const best = p.indexOf(Math.max(...p));
        $('teach-pred').dataset.class = String(best);
        $('teach-pred').textContent = `${state.classes[best].name} (${(100 * p[best]).toFixed(0)}%)`;
      }
      const now = performance.now();
      const s = state.stats;
      s.frames += 1;
      s.fps = 0.9 * s.fps + 0.1 * (1000 / Math.max(1, now - last));
      [s.preprocess, s.inference, s.read] = times.map((t, k) => 0.9 * [s.preprocess, s.inference, s.read][k] + 0.1 * t);
      last = now;
      $('stats').dataset.fps = s.fps.toFixed(1);
      $('stats').textContent = `${s.fps.toFixed(1)} frames/s · capture + preprocess ${s.preprocess.toFixed(1)} ms · inference ${s.inference.toFixed(1)} ms · post-process + read ${s.read.toFixed(1)} ms`;
    } catch (e) {
      status(`error: ${e.message}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function loadOnnx(bytes) {
  const model = await pg.loadOnnx(bytes);
  const inp = model.inputs[0];
  const s = inp.shape || [];
  const side = (d) => (Number.isInteger(d) && d > 0 ? d : 224);
  const isCh = (d) => d === 1 || d === 3 || d === 4;
  // [N, C, H, W] (ONNX, PyTorch) unless it reads as [N, H, W, C] (Keras, pixelgrad's own export).
  const nhwc = s.length === 4 && isCh(s[3]) && !isCh(s[1]);
  const size = nhwc ? [side(s[1]), side(s[2])] : [side(s[2]), side(s[3])];
  const channels = (nhwc ? s[3] : s[1]) === 1 ? 1 : 3;
  if (state.onnx) state.onnx.model.dispose();
  state.onnx = { model, size, input: inp.name, layout: nhwc ? 'nhwc' : 'nchw', channels };
  // The trainer needs the backbone too; samples recorded for the old input no longer fit.
  await ask({ type: 'onnx', bytes }, [], 'onnx');
  state.samples = [];
  renderClasses();
  status(`ONNX model: input ${inp.name} [${s.join(', ')}] → ${size.join('x')} ${nhwc ? 'NHWC' : 'NCHW'}`);
}

async function main() {
  const backend = params.get('backend') || 'auto';
  const allowSoftware = params.get('software') === '1';
  const rt = await pg.init({ backend, allowSoftware });
  // The trainer starts before the page counts requests (its script and wasm are loads).
  trainer = new Worker(new URL('./camera-worker.js', import.meta.url), { type: 'module' });
  await ask({ type: 'init', backend: rt.backend, allowSoftware }, [], 'ready');
  const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 320, height: 240 } });
  state.video.srcObject = stream;
  await state.video.play();
  addClass();
  addClass();
  $('add-class').onclick = addClass;
  $('train').onclick = () => train().catch((e) => status(`error: ${e.message}`));
  $('save').onclick = () => state.head.save('indexeddb://camera-teach').then(() => status('saved to indexeddb://camera-teach'), (e) => status(`error: ${e.message}`));
  $('export').onclick = () => (state.onnx ? state.head.save('downloads://camera-teach.onnx') : state.head.save('downloads://camera-teach')).catch((e) => status(`error: ${e.message}`));
  $('onnx-file').onchange = async (ev) => {
    const f = ev.target.files[0];
    if (f) await loadOnnx(new Uint8Array(await f.arrayBuffer())).catch((e) => status(`error: ${e.message}`));
  };
  status(`${rt.backend}: ${rt.report.adapter}`);
  document.body.dataset.state = 'ready';
  net.markReady();
  loop();
}

window.cameraDemo = { state, addSample, train, predictNow, loadOnnx, addClass, classify };
main().catch((e) => {
  status(`error: ${e.message}`);
  document.body.dataset.state = 'error';
});
