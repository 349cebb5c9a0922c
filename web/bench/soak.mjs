// Browser soak run (issue 17; not part of CI): trains a small model through `model.fit` for
// many steps on each backend in headless Chromium and samples the backend's `rt.memory()` and
// the page's JS heap (`performance.memory.usedJSHeapSize` after a forced GC). After warm-up
// (the first 10 % of steps) both must stay flat: device bytes may grow by at most 1 MiB and the
// JS heap by at most 16 MiB (the native soak example's bounds); the run fails otherwise.
//
//   cargo xtask build-wasm && (cd web && npm ci)       # once
//   node web/bench/soak.mjs                            # 10,000 steps on webgpu, webgl and cpu
//   node web/bench/soak.mjs --steps 2000 --backends webgl,cpu --json-out /tmp/soak.json
//
// Automatic checkpoints stay on (the default), so their host copies are part of what is measured.
import fs from 'node:fs';
import { startServer, launchBrowser, newPage } from '../tests/harness.mjs';

const args = process.argv.slice(2);
function opt(name, dflt) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
}
const steps = Number(opt('steps', '10000'));
const backends = opt('backends', 'webgpu,webgl,cpu').split(',');
const jsonOut = opt('json-out', null);
const DEVICE_BOUND = 1 << 20;
const HEAP_BOUND = 16 << 20;

if (!(Number.isInteger(steps) && steps >= 100)) {
  console.error(`soak: --steps must be a whole number >= 100, got ${opt('steps')}`);
  process.exit(2);
}

/** In the page: `steps` fit steps of the digits MLP on `backend`, sampled every `every` steps. */
async function soak(pg, { backend, steps }) {
  const rt = await pg.init({ backend });
  const d = pg.data.digits();
  const x = pg.tensor(d.train.x, [d.train.n, 64]);
  const y = pg.tensor(d.train.y, [d.train.n]);
  const model = pg.sequential([
    pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }),
    pg.layers.dense({ units: 10 }),
  ]);
  model.compile({ optimizer: pg.optimizers.adam(1e-3), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
  const batchSize = 32;
  const perEpoch = Math.ceil(d.train.n / batchSize);
  const epochs = Math.ceil(steps / perEpoch);
  const every = 250;
  const samples = [];
  const sample = (step) => {
    if (typeof window.gc === 'function') window.gc();
    const m = rt.memory();
    samples.push({ step, device: m.bytesInUse, heap: performance.memory ? performance.memory.usedJSHeapSize : NaN, allocations: m.allocations, compiles: m.compiles });
  };
  const t0 = performance.now();
  let last = 0;
  let done = 0;
  const h = await model.fit(x, y, {
    epochs, batchSize, readEvery: 50, seed: 1,
    onBatchEnd: (step) => {
      done = step;
      if (step - last >= every) {
        last = step;
        sample(step);
      }
      if (step >= steps) model.stopTraining = true;
    },
  });
  const seconds = (performance.now() - t0) / 1000;
  sample(done);
  const ev = await model.evaluate(pg.tensor(d.test.x, [d.test.n, 64]), pg.tensor(d.test.y, [d.test.n]));
  return { backend: rt.backend, adapter: rt.report.adapter, steps: done, seconds, samples, checkpoints: h.checkpoints, accuracy: ev.accuracy, gc: typeof window.gc === 'function' };
}

const server = await startServer();
const browser = await launchBrowser(['--enable-precise-memory-info', '--js-flags=--expose-gc']);
const results = [];
let failed = false;
try {
  for (const backend of backends) {
    const page = await newPage(browser);
    await page.goto(`${server.url}/tests/pages/api.html`);
    await page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
    const r = await page.evaluate(([src, a]) => {
      // eslint-disable-next-line no-new-func
      const f = new Function('pg', 'arg', `return (${src})(pg, arg);`);
      return f(window.pg, a);
    }, [soak.toString(), { backend, steps }]);
    await page.close();
    const after = r.samples.filter((s) => s.step >= steps * 0.1);
    const span = (k) => Math.max(...after.map((s) => s[k])) - Math.min(...after.map((s) => s[k]));
    const growth = (k) => after[after.length - 1][k] - after[0][k];
    r.deviceSpan = span('device');
    r.heapSpan = span('heap');
    r.deviceGrowth = growth('device');
    r.heapGrowth = growth('heap');
    r.allocationsAfterWarmup = growth('allocations');
    r.compilesAfterWarmup = growth('compiles');
    r.ok = r.deviceGrowth <= DEVICE_BOUND && r.heapGrowth <= HEAP_BOUND && r.deviceSpan <= DEVICE_BOUND && r.heapSpan <= HEAP_BOUND;
    failed = failed || !r.ok;
    results.push(r);
    const mib = (b) => (b / 1048576).toFixed(2);
    console.log(
      `${r.backend.padEnd(6)} ${r.steps} steps in ${r.seconds.toFixed(1)} s (${((r.seconds * 1000) / r.steps).toFixed(2)} ms/step), ` +
        `test accuracy ${r.accuracy.toFixed(4)}; after warm-up: device ${mib(after[0].device)} -> ${mib(after[after.length - 1].device)} MiB ` +
        `(span ${mib(r.deviceSpan)}), JS heap ${mib(after[0].heap)} -> ${mib(after[after.length - 1].heap)} MiB (span ${mib(r.heapSpan)}), ` +
        `allocations +${r.allocationsAfterWarmup}, compiles +${r.compilesAfterWarmup}, checkpoints every ${r.checkpoints.every} (${r.checkpoints.taken}, ` +
        `${(r.checkpoints.ms / 1000).toFixed(2)} s) ${r.ok ? 'OK' : 'GREW'}`,
    );
  }
} finally {
  await browser.close();
  await server.close();
}
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), steps, results }, null, 1));
process.exit(failed ? 1 : 0);
