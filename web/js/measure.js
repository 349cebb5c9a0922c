// `init({ backend: 'auto', measure })`: choosing among the backends that passed their checks by
// timing the caller's own model on each, the way `pixelgrad train --backend auto` does natively
// (crates/pixelgrad-cli/src/measure.rs).
//
// Per candidate: WARM_STEPS untimed training steps (shader compiles, buffer pools, step plans),
// then timed steps, each ending with the loss readback so queued GPU work is really done, until
// the candidate's share of BUDGET_MS is spent (at least MIN_STEPS). The fastest wins. The choice
// is kept in localStorage (where the page has it) under a key made of the model's layers, the
// batch size and every candidate's adapter or renderer string: a new GPU or driver measures
// again. Test hook: `globalThis.__pixelgradTestSlowBackends = ['cpu']` adds SLOW_MS to every
// timed step of the named backends.

const BUDGET_MS = 300;
const WARM_STEPS = 4;
const MIN_STEPS = 2;
const SLOW_MS = 50;
const STORE_KEY = 'pixelgrad.autoBackend';

/** Checks `measure` ({ layers, batchSize = 32, loss = 'softmaxCrossEntropy' }); returns it filled in. */
export function measureSpec(measure) {
  const what = 'pg.init: measure';
  if (typeof measure !== 'object' || measure === null || !Array.isArray(measure.layers) || measure.layers.length === 0) {
    throw new Error(`${what} must be { layers: [pg.layers.dense(...), ...], batchSize, loss }: the layers of the model you will train`);
  }
  if (measure.layers.some((l) => l && l.type === 'onnx')) throw new Error(`${what}: onnx layers cannot be measured before the model is loaded; leave measure out`);
  const batchSize = measure.batchSize === undefined ? 32 : measure.batchSize;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 65536) throw new Error(`${what}.batchSize must be an integer in 1..65536, got ${batchSize}`);
  const loss = measure.loss === undefined ? 'softmaxCrossEntropy' : measure.loss;
  if (typeof loss !== 'string') throw new Error(`${what}.loss must be a loss name`);
  return { layers: measure.layers.map((l) => ({ ...l })), batchSize, loss };
}

function storage() {
  try {
    return globalThis.localStorage || null;
  } catch {
    return null; // an opaque origin or storage blocked by the user
  }
}

function readCache() {
  try {
    const s = storage();
    const v = s && JSON.parse(s.getItem(STORE_KEY) || '{}');
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {}; // unreadable or corrupt: measured again and rewritten
  }
}

/** The cache key of a model on a set of started backends ({ name, adapter }). */
export function cacheKey(spec, candidates) {
  return JSON.stringify([spec.layers, spec.batchSize, spec.loss, candidates.map((c) => [c.name, c.adapter])]);
}

function slowed(name) {
  const hook = globalThis.__pixelgradTestSlowBackends;
  return Array.isArray(hook) && hook.includes(name);
}

/** Times training steps of `spec` on a started backend's runtime `inner`; `budgetMs` of timed steps. */
async function timeModel(wasm, name, inner, spec, budgetMs) {
  const m = new wasm.Model(inner, JSON.stringify({ layers: spec.layers, seed: 1 }), []);
  try {
    m.compile('sgd', 0.01, 0, spec.loss);
    const sample = Array.from(m.inputShape);
    const per = sample.reduce((a, b) => a * b, 1);
    const classes = m.classes;
    if (!classes) throw new Error('pg.init: measure: the model does not end in a flat output, so it cannot be timed here; leave measure out');
    const n = spec.batchSize;
    const x = new Float32Array(n * per);
    for (let i = 0; i < x.length; i++) x[i] = ((i * 2654435761) % 1000) / 1000;
    const y = new Float32Array(n * classes);
    for (let i = 0; i < n; i++) y[i * classes] = 1;
    const step = async () => {
      m.trainStep(x, [n, ...sample], y, [n, classes]);
      await m.readTrain();
    };
    const t0 = performance.now();
    for (let i = 0; i < WARM_STEPS; i++) await step();
    const warmMs = performance.now() - t0;
    const t1 = performance.now();
    let steps = 0;
    while (steps < MIN_STEPS || performance.now() - t1 < budgetMs) {
      await step();
      if (slowed(name)) await new Promise((r) => setTimeout(r, SLOW_MS));
      steps++;
    }
    return { backend: name, warmMs, stepMs: (performance.now() - t1) / steps, steps };
  } finally {
    m.free();
  }
}

/**
 * Picks one of `candidates` ([{ name, adapter, inner }], all started) for `spec`: the cached
 * choice for this model and these devices, else the fastest measured now (then cached).
 * Returns { backend, timings, cached }.
 */
export async function chooseBackend(wasm, candidates, spec) {
  const key = cacheKey(spec, candidates);
  const hit = readCache()[key];
  if (hit && candidates.some((c) => c.name === hit.backend) && Array.isArray(hit.timings)) {
    return { backend: hit.backend, timings: hit.timings, cached: true };
  }
  const share = BUDGET_MS / candidates.length;
  const timings = [];
  for (const c of candidates) timings.push(await timeModel(wasm, c.name, c.inner, spec, share));
  const best = timings.reduce((a, b) => (b.stepMs < a.stepMs ? b : a));
  const choice = { backend: best.backend, timings };
  const s = storage();
  if (s) {
    try {
      const all = readCache();
      all[key] = choice;
      s.setItem(STORE_KEY, JSON.stringify(all));
    } catch {
      // a full or blocked storage costs only the next page's measurement
    }
  }
  return { ...choice, cached: false };
}
