// The federated demo: this tab is one node of a Flower federation. URL parameters preset the
// controls (`?backend=webgl&index=1&count=4&alpha=0.5&data=digits`); `auto=1` joins as soon as
// the data is ready; `nodeKey=1` (or `nodeKey=NAME`, one name per tab of a browser) joins with
// the page's persistent key (pg.flower.nodeKey(), shown on the page for `flwr supernode
// register`) instead of a fresh one; `secagg=1` sends updates only through Flower's SecAgg+ (the
// server runs `SecAggPlusWorkflow`; `distributedDp=Z,C,DELTA` adds this node's share of the
// noise); `maxEpsilon=E` is this node's privacy budget (rounds past
// it are refused); the last column shows the (ε, δ) spent so far. Each event is also
// passed to `window.__pgFederatedEvent` when a test harness defines it; a driver can read the
// key with `window.pgFederated.publicKey()` and start with `window.pgFederated.join()`.
import * as pg from '../pkg/index.js';
import { readMnistFiles } from './files.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const state = { data: null, joined: false, events: [], summary: null, error: null, rounds: new Map(), controller: null, fleet: 0, other: 0 };
window.pgFederated = state;

function setStatus(text, kind = 'ok') {
  $('status').textContent = text;
  document.body.dataset.state = kind;
}

for (const k of ['backend', 'index', 'count', 'alpha', 'seed']) if (params.has(k)) $(k).value = params.get(k);
if (params.get('data') === 'mnist') document.querySelector('input[value="mnist"]').checked = true;
$('mnist-field').hidden = !document.querySelector('input[value="mnist"]').checked;

// Requests the page makes after joining, by kind (the privacy panel in the header).
new PerformanceObserver((list) => {
  if (!state.joined) return;
  for (const e of list.getEntries()) {
    if (new URL(e.name).pathname.startsWith('/v1/fleet/')) state.fleet += 1;
    else state.other += 1;
  }
  $('fleet-count').textContent = state.fleet;
  $('other-count').textContent = state.other;
  $('net').classList.toggle('bad', state.other > 0);
}).observe({ type: 'resource', buffered: false });

async function loadData() {
  if (document.querySelector('input[value="mnist"]').checked) {
    const files = $('mnist-files').files;
    if (!files.length) return null;
    const b = await readMnistFiles(files);
    if (!b.testImages) throw new Error('pick the t10k test pair too (each node evaluates the global model on its share of the test set)');
    const train = pg.data.parseMnist(b.trainImages, b.trainLabels);
    const test = pg.data.parseMnist(b.testImages, b.testLabels);
    return { train, test, inputShape: [train.x.length / train.n], name: 'MNIST' };
  }
  return { ...pg.data.digits(), name: 'digits' };
}

function row(round) {
  let r = state.rounds.get(round);
  if (!r) {
    const tr = document.createElement('tr');
    tr.innerHTML = '<td></td><td></td><td></td><td></td><td></td><td></td><td></td>';
    tr.cells[0].textContent = round;
    $('rounds').tBodies[0].appendChild(tr);
    r = { tr };
    state.rounds.set(round, r);
  }
  return r.tr;
}

function onEvent(e) {
  state.events.push(e.weights ? { ...e, weights: e.weights.length } : e);
  if (window.__pgFederatedEvent) window.__pgFederatedEvent(e.weights ? { ...e, weights: e.weights.length } : e);
  if (e.type === 'connected') setStatus(`joined as node ${e.nodeId}; waiting for the ServerApp`);
  if (e.type === 'received') setStatus(`round ${e.round}: ${e.kind}…`);
  if (e.type === 'trained') {
    const tr = row(e.round);
    tr.cells[1].textContent = e.loss.toFixed(4);
    tr.cells[2].textContent = e.accuracy.toFixed(4);
    tr.cells[3].textContent = e.updateNorm.toFixed(3) + (e.clippedTo ? ` → ≤ ${e.clippedTo}` : '') + (e.noiseStd ? ` + N(0, ${e.noiseStd.toFixed(3)}²)` : '');
    // ε is cumulative over the rounds this node trained; without DP there is no bound to show
    tr.cells[6].textContent = (e.epsilon == null ? 'no DP' : `ε = ${e.epsilon.toFixed(3)}, δ = ${e.delta}`) + (e.secagg ? ' · SecAgg+' : '');
  }
  if (e.type === 'replied' && e.kind === 'train') row(e.round).cells[5].textContent = `${(e.bytes / 1024).toFixed(1)} KiB`;
  if (e.type === 'evaluated') row(e.round).cells[4].textContent = `${e.accuracy.toFixed(4)} (${e.examples} samples)`;
  if (e.type === 'failed') setStatus(`round ${e.round}: ${e.reason}`, 'error');
}

async function join() {
  $('join').disabled = true;
  try {
    const rt = pg.runtime();
    const count = Number($('count').value);
    const index = Number($('index').value);
    const alpha = Number($('alpha').value) || undefined;
    const data = pg.flower.partition(state.data, { index, count, alpha, seed: Number($('seed').value) });
    $('shard').textContent = `${data.train.n} training samples, ${data.test.n} test samples on ${rt.backend}`;
    const model = pg.sequential([
      pg.layers.dense({ units: 256, inputShape: state.data.inputShape, activation: 'relu' }),
      pg.layers.dense({ units: 10 }),
    ]);
    model.compile({ optimizer: pg.optimizers.adam(1e-3), loss: 'softmaxCrossEntropy' });
    state.controller = new AbortController();
    state.joined = true;
    $('leave').disabled = false;
    setStatus('joining…');
    let localDp;
    if (params.get('localDp')) {
      const [epsilon, delta, clippingNorm] = params.get('localDp').split(',').map(Number);
      localDp = { epsilon, delta, clippingNorm };
    }
    const nodeKey = keyName ? await pg.flower.nodeKey({ name: keyName }) : undefined;
    const secagg = params.get('secagg') === '1' ? true : undefined;
    const maxEpsilon = params.has('maxEpsilon') ? Number(params.get('maxEpsilon')) : undefined;
    let distributedDp;
    if (params.get('distributedDp')) {
      const [noiseMultiplier, clippingNorm, delta] = params.get('distributedDp').split(',').map(Number);
      distributedDp = { noiseMultiplier, clippingNorm, delta };
    }
    state.summary = await pg.flower.join({ server: location.origin, model, data, onEvent, localDp, nodeKey, secagg, distributedDp, maxEpsilon, signal: state.controller.signal });
    setStatus(`the run finished: ${state.summary.rounds} rounds trained, ${(state.summary.bytesUp / 1024).toFixed(0)} KiB sent`, 'done');
  } catch (err) {
    state.error = err.message;
    setStatus(err.message, 'error');
  } finally {
    $('leave').disabled = true;
  }
}

const keyName = params.get('nodeKey') === '1' ? 'default' : params.get('nodeKey');
state.join = () => join();
state.publicKey = async () => (await pg.flower.nodeKey({ name: keyName || 'default' })).openssh;

async function main() {
  try {
    await pg.init({ backend: $('backend').value, allowSoftware: true });
    if (keyName) {
      const k = await pg.flower.nodeKey({ name: keyName });
      $('node-key').hidden = false;
      $('node-key-line').textContent = k.openssh;
      $('node-key-fp').textContent = k.fingerprint;
    }
    setStatus(`backend ${pg.runtime().backend}; pick the data and join`);
    const refresh = async () => {
      state.data = await loadData();
      $('join').disabled = !state.data;
      if (state.data && params.get('auto') === '1' && !state.joined) join();
    };
    for (const el of document.querySelectorAll('input[name="data"]')) {
      el.addEventListener('change', () => {
        $('mnist-field').hidden = !document.querySelector('input[value="mnist"]').checked;
        refresh().catch((e) => setStatus(e.message, 'error'));
      });
    }
    $('mnist-files').addEventListener('change', () => refresh().catch((e) => setStatus(e.message, 'error')));
    $('join').addEventListener('click', join);
    $('leave').addEventListener('click', () => state.controller && state.controller.abort());
    await refresh();
  } catch (err) {
    state.error = err.message;
    setStatus(err.message, 'error');
  }
}
main();
