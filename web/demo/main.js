// The demo page: wires the controls to the worker (worker.js owns pixelgrad and does all the
// training), draws the chart, runs the drawing pad and keeps every status and error visible.
//
// URL parameters preset the controls: ?backend=cpu&software=1&preset=cnn&epochs=5&lr=0.01

import { LiveChart } from './chart.js';
import { createPad, drawPreview } from './pad.js';
import { readMnistFiles } from './files.js';
import { argmax } from './util.js';
import { watchNetwork } from './netwatch.js';
import { setupDebug } from './debug.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const SAVE_NAME = 'pixelgrad-demo';
const META_KEY = `${SAVE_NAME}:meta`;

// ---- status and errors ------------------------------------------------------------------------

function log(text, cls) {
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()}  ${text}`;
  if (cls) li.className = cls;
  const box = $('log');
  box.append(li);
  box.scrollTop = box.scrollHeight; // scroll the log box only, never the page
}

function setStatus(text) {
  $('status').textContent = text;
  log(text);
}

function showError(where, message, stack) {
  const text = `error (${where}): ${message}`;
  $('status').textContent = text;
  document.body.dataset.state = 'error';
  document.body.dataset.lastError = message;
  log(stack && !stack.includes(message) ? `${text}\n${stack}` : text, 'error');
  console.error(text, stack || '');
}

window.addEventListener('error', (e) => showError('page', e.message, e.error?.stack));
window.addEventListener('unhandledrejection', (e) => showError('page', e.reason?.message || String(e.reason), e.reason?.stack));

// ---- controls ---------------------------------------------------------------------------------

for (const [id, key] of [['backend', 'backend'], ['preset', 'preset'], ['optimizer', 'optimizer'], ['lr', 'lr'], ['epochs', 'epochs'], ['batch', 'batch'], ['seed', 'seed']]) {
  if (params.has(key)) $(id).value = params.get(key);
}
$('software').checked = params.get('software') === '1';
for (let d = 0; d < 10; d++) $('label').append(new Option(String(d), String(d)));

const settings = () => ({
  preset: $('preset').value,
  optimizer: $('optimizer').value,
  lr: Number($('lr').value),
  seed: Number($('seed').value) | 0,
});

const ui = { ready: false, training: false, busy: 0, imageShape: [8, 8, 1], dataKind: 'digits', dataLoaded: false };

/** Enables exactly the controls that make sense now. */
function refreshControls() {
  const idle = ui.ready && !ui.training;
  for (const id of ['train', 'save', 'load', 'teach']) $(id).disabled = !idle;
  // Building a model, switching data or backend only needs no training to run, so a failed
  // first start (bad backend, bad learning rate) can be fixed from the page.
  for (const id of ['build', 'preset', 'mnist-files', 'apply-backend', 'backend', 'software']) $(id).disabled = ui.training;
  for (const el of document.querySelectorAll('input[name="data"]')) el.disabled = ui.training;
  $('pause').disabled = !ui.training;
  if (ui.ready) document.body.dataset.state = ui.training ? 'training' : ui.busy ? 'busy' : document.body.dataset.state === 'error' ? 'error' : 'ready';
}

// ---- worker -----------------------------------------------------------------------------------

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const send = (msg, transfer) => worker.postMessage(msg, transfer || []);
worker.addEventListener('error', (e) => {
  // A module worker that fails to load (e.g. web/pkg not built) only reports a bare error event.
  e.preventDefault();
  showError('worker', e.message || 'the worker failed to start (is web/pkg built? run `cargo xtask build-wasm`)');
});
worker.addEventListener('messageerror', () => showError('worker', 'a message from the worker could not be decoded'));

const chart = new LiveChart($('chart'));
const net = watchNetwork($('net'));

const weights = $('weights');
if (weights.transferControlToOffscreen) {
  const off = weights.transferControlToOffscreen();
  const hidden = $('hidden').transferControlToOffscreen();
  send({ type: 'canvas', canvas: off, hidden }, [off, hidden]);
} else {
  showError('page', 'this browser cannot hand a canvas to a worker (no transferControlToOffscreen); weights are not drawn');
}

const fmt = (v, d = 4) => (Number.isFinite(v) ? v.toFixed(d) : '—');

function renderReport(backend, report) {
  const el = $('report');
  el.textContent = '';
  const head = document.createElement('div');
  head.innerHTML = '<b></b>';
  head.firstChild.textContent = `running on: ${backend}`;
  el.append(head);
  if (!report) return;
  const table = document.createElement('table');
  table.innerHTML = '<tr><th>backend</th><th>ok</th><th>reason</th></tr>';
  for (const t of report.tried || []) {
    const tr = table.insertRow();
    tr.insertCell().textContent = t.backend;
    const ok = tr.insertCell();
    ok.textContent = t.ok ? 'yes' : 'no';
    ok.className = t.ok ? 'ok' : 'no';
    tr.insertCell().textContent = t.reason || '';
  }
  el.append(table);
  const extra = document.createElement('div');
  const adapter = typeof report.adapter === 'string' ? report.adapter : report.adapter ? JSON.stringify(report.adapter) : 'n/a';
  const err = report.selfTest?.maxRelError;
  extra.textContent = `adapter: ${adapter} · self-test max relative error: ${Number.isFinite(err) ? err.toExponential(2) : 'n/a'}`;
  el.append(extra);
  el.dataset.backend = backend;
}

let firstModel = true;
const handlers = {
  hello() {},
  status: (m) => setStatus(m.text),
  error(m) {
    if (m.job === 'predict' || m.job === 'teach') predInFlight = false;
    showError(m.job, m.message, m.stack);
  },
  busy(m) {
    ui.busy += m.on ? 1 : -1;
    // A train request that failed before training started never sends 'training'.
    if (m.job === 'train' && !m.on) ui.training = false;
    refreshControls();
  },
  runtime(m) {
    renderReport(m.backend, m.report);
    setStatus(`backend: ${m.backend}`);
  },
  data(m) {
    ui.imageShape = m.imageShape;
    ui.dataKind = m.kind;
    ui.dataLoaded = true;
    $('data-info').textContent = `${m.kind}: ${m.nTrain} training and ${m.nTest} test images of ${m.imageShape.join('x')}`;
    setStatus(`data: ${m.kind} (${m.nTrain} train / ${m.nTest} test)`);
    predictNow();
  },
  model(m) {
    if (!m.loaded) {
      // A loaded model continues the curve and numbers of the one it replaced.
      chart.clear();
      setStep(m.step, 0);
      for (const id of ['loss', 'acc', 'val', 'test']) $(id).textContent = '—';
    }
    setStatus(m.loaded ? `loaded '${m.loaded}' (${m.spec.preset})` : `new ${m.spec.preset} model, ${m.spec.optimizer} lr ${m.spec.lr}`);
    // A model that builds clears an earlier error state (the error stays in the log).
    document.body.dataset.state = 'ready';
    if (firstModel) {
      firstModel = false;
      ui.ready = true;
      // Everything the demo needs is loaded now; any later request is a bug the indicator shows.
      net.markReady();
      send({ type: 'ready' });
    }
    refreshControls();
    predictNow();
  },
  training(m) {
    ui.training = m.on;
    setStatus(m.on ? 'training…' : m.stopped ? `paused at step ${m.step}` : `finished at step ${m.step}`);
    refreshControls();
    if (!m.on) predictNow();
  },
  batch(m) {
    chart.add(m.step, m.loss, m.accuracy);
    setStep(m.step);
    $('loss').textContent = fmt(m.loss);
    $('acc').textContent = fmt(m.accuracy, 3);
  },
  epoch(m) {
    setStep(m.step, m.epoch);
    const l = m.logs || {};
    const va = l.valAccuracy ?? l.val_accuracy ?? l.validationAccuracy;
    const vl = l.valLoss ?? l.val_loss ?? l.validationLoss;
    if (Number.isFinite(va) || Number.isFinite(vl)) $('val').textContent = `loss ${fmt(vl)} · acc ${fmt(va, 3)}`;
    chart.addEpoch(m.step, { loss: l.loss, accuracy: l.accuracy, valLoss: vl, valAccuracy: va });
  },
  evaluated(m) {
    $('test').textContent = `loss ${fmt(m.loss)} · acc ${fmt(m.accuracy, 3)}`;
    $('test').dataset.accuracy = String(m.accuracy);
  },
  prediction: (m) => showPrediction(m),
  taught(m) {
    $('taught').textContent = `${m.samples} sample${m.samples === 1 ? '' : 's'} taught`;
    $('taught').dataset.count = String(m.samples);
    setStep(m.step);
    setStatus(`taught '${m.label}' (${m.samples} of your samples so far)`);
  },
  saved(m) {
    localStorage.setItem(META_KEY, JSON.stringify(m.meta));
    setStatus(`saved to indexeddb://${m.name}`);
  },
  net: (m) => net.setWorker(m.count, m.urls),
};

Object.assign(handlers, setupDebug(send, handlers));

worker.addEventListener('message', (e) => {
  const m = e.data || {};
  const h = handlers[m.type];
  if (h) h(m);
  else showError('page', `unknown message from the worker: ${m.type}`);
});

function setStep(step, epoch) {
  $('step').textContent = String(step);
  $('step').dataset.step = String(step);
  if (epoch !== undefined) $('epoch').textContent = String(epoch);
}

// ---- drawing pad and predictions --------------------------------------------------------------

let predSeq = 0;
let predInFlight = false;
let predAgain = false;

const pad = createPad($('pad'), () => predictNow());

/** Asks for a prediction of the drawing; at most one is in flight, the newest drawing wins. */
function predictNow() {
  if (!ui.ready || pad.isEmpty()) return;
  if (predInFlight) {
    predAgain = true;
    return;
  }
  const pixels = pad.sample(ui.imageShape);
  drawPreview($('preview'), pixels, ui.imageShape[0], ui.imageShape[1]);
  predInFlight = true;
  predSeq += 1;
  send({ type: 'predict', id: predSeq, pixels }, [pixels.buffer]);
}

function showPrediction(m) {
  predInFlight = false;
  const el = $('prediction');
  const best = argmax(m.probs);
  el.textContent = `${best}  (${(m.probs[best] * 100).toFixed(1)}%)`;
  el.dataset.label = String(best);
  el.dataset.id = String(m.id);
  el.dataset.probs = JSON.stringify(m.probs.map((p) => Number(p.toFixed(4))));
  const box = $('probs');
  box.textContent = '';
  m.probs.forEach((p, d) => {
    const name = document.createElement('span');
    name.textContent = String(d);
    const barWrap = document.createElement('span');
    const bar = document.createElement('div');
    bar.className = 'bar';
    bar.style.width = `${Math.max(1, p * 100)}%`;
    barWrap.append(bar);
    const pct = document.createElement('span');
    pct.textContent = `${(p * 100).toFixed(1)}%`;
    if (d === best) name.className = pct.className = 'top';
    box.append(name, barWrap, pct);
  });
  if (predAgain) {
    predAgain = false;
    predictNow();
  }
}

$('clear').addEventListener('click', () => {
  pad.clear();
  drawPreview($('preview'), new Float32Array(ui.imageShape[0] * ui.imageShape[1]), ui.imageShape[0], ui.imageShape[1]);
  $('prediction').textContent = '—';
  $('prediction').dataset.label = '';
  $('probs').textContent = '';
});

$('teach').addEventListener('click', () => {
  if (pad.isEmpty()) return showError('teach', 'draw a digit first');
  const pixels = pad.sample(ui.imageShape);
  predSeq += 1;
  predInFlight = true;
  send({ type: 'teach', id: predSeq, label: Number($('label').value), pixels }, [pixels.buffer]);
});

// ---- training, model, data, backend -----------------------------------------------------------

$('build').addEventListener('click', () => send({ type: 'build', ...settings() }));
$('preset').addEventListener('change', () => send({ type: 'build', ...settings() }));
for (const id of ['optimizer', 'lr']) {
  $(id).addEventListener('change', () => {
    if (ui.ready) send({ type: 'optimizer', optimizer: $('optimizer').value, lr: Number($('lr').value) });
  });
}
$('train').addEventListener('click', () => {
  ui.training = true; // until the worker confirms; stops double starts
  refreshControls();
  send({ type: 'train', epochs: Number($('epochs').value), batchSize: Number($('batch').value) });
});
$('pause').addEventListener('click', () => send({ type: 'pause' }));
$('save').addEventListener('click', () => send({ type: 'save', name: SAVE_NAME }));
$('load').addEventListener('click', () => {
  let meta = null;
  try {
    meta = JSON.parse(localStorage.getItem(META_KEY) || 'null');
  } catch (e) {
    return showError('load', `stored model description is unreadable: ${e.message}`);
  }
  send({ type: 'load', name: SAVE_NAME, meta });
});

$('apply-backend').addEventListener('click', () => {
  send({ type: 'init', backend: $('backend').value, allowSoftware: $('software').checked });
  if (!ui.dataLoaded) send({ type: 'data', kind: 'digits' }); // the first start failed before it
  send({ type: 'build', ...settings() });
});

for (const el of document.querySelectorAll('input[name="data"]')) {
  el.addEventListener('change', () => {
    const mnist = el.value === 'mnist' && el.checked;
    $('mnist-field').hidden = !mnist;
    if (el.value === 'digits' && el.checked && ui.dataKind !== 'digits') {
      send({ type: 'data', kind: 'digits' });
      send({ type: 'build', ...settings() });
    }
    if (mnist) setStatus('pick the MNIST IDX files (images and labels)');
  });
}

$('mnist-files').addEventListener('change', async (e) => {
  const files = [...e.target.files];
  if (!files.length) return;
  try {
    setStatus(`reading ${files.map((f) => f.name).join(', ')}…`);
    const bufs = await readMnistFiles(files);
    const transfer = Object.values(bufs);
    send({ type: 'data', kind: 'mnist', ...bufs }, transfer);
    send({ type: 'build', ...settings() });
  } catch (err) {
    showError('mnist files', err.message, err.stack);
  }
});

// ---- start ------------------------------------------------------------------------------------

refreshControls();
send({ type: 'init', backend: $('backend').value, allowSoftware: $('software').checked });
send({ type: 'data', kind: 'digits' });
send({ type: 'build', ...settings() });
