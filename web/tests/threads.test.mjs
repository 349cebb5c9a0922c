// Threads for the CPU backend (web/js/threads.js, crates/pixelgrad-cpu/src/threads.rs): in a
// cross-origin isolated page the threaded build runs the CPU kernels on the page's thread and
// Web Workers, and gives bit-identical results to the single-threaded build (every threaded
// kernel splits its output into chunks computed as on one thread); a page that is not
// isolated falls back to one thread and the report says why. Needs the package built with
// `cargo xtask build-wasm --threads`. No timings here: speed is in the benchmarks.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage } from './harness.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs tests/pages/threads.js in a fresh page (`isolated: false` strips COOP/COEP from the page). */
async function runPage(opts, { isolated = true } = {}) {
  const page = await newPage(browser);
  if (!isolated) {
    await page.route('**/tests/pages/blank.html', async (route) => {
      const response = await route.fetch();
      const headers = { ...response.headers() };
      delete headers['cross-origin-opener-policy'];
      delete headers['cross-origin-embedder-policy'];
      await route.fulfill({ response, headers });
    });
  }
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const facts = await page.evaluate(() => ({ isolated: self.crossOriginIsolated, hw: navigator.hardwareConcurrency }));
  const r = await page.evaluate(async (o) => (await import('/tests/pages/threads.js')).run(o), opts);
  await page.close();
  return { ...r, facts };
}

let threaded;
let single;

test('threads: an isolated page runs the CPU kernels on the threaded build with the threads asked for', async () => {
  threaded = await runPage({ threads: 4 });
  assert.equal(threaded.error, undefined, threaded.error);
  assert.equal(threaded.facts.isolated, true);
  assert.deepEqual({ ...threaded.threads, reason: undefined }, { count: 4, build: 'threaded', requested: 4, isolated: true, reason: undefined }, threaded.threads.reason);
  assert.match(threaded.threads.reason, /threads: 4/);
  // the workers, not only the page's thread, ran chunks of the kernels
  assert.ok(threaded.workerChunks > 0, `chunks run by workers: ${threaded.workerChunks}`);
});

test('threads: threads: 1 runs the single-threaded build', async () => {
  single = await runPage({ threads: 1 });
  assert.equal(single.error, undefined, single.error);
  assert.deepEqual({ ...single.threads, reason: undefined }, { count: 1, build: 'single', requested: 1, isolated: true, reason: undefined });
  assert.equal(single.workerChunks, 0);
});

test('threads: threaded and single-threaded CPU results are bit-identical (training, products)', () => {
  assert.ok(threaded && single, 'both runs happened');
  // Numbers from Float32Arrays compare exactly: equal here means equal bits (NaN aside, and a
  // NaN in a loss would fail the loss check below).
  assert.deepEqual(threaded.loss, single.loss);
  assert.ok(threaded.loss.every(Number.isFinite) && threaded.loss[1] < threaded.loss[0], `loss ${threaded.loss}`);
  assert.deepEqual(Object.keys(threaded.weights).sort(), Object.keys(single.weights).sort());
  for (const k of Object.keys(single.weights)) assert.deepEqual(threaded.weights[k], single.weights[k], `weights ${k}`);
  assert.deepEqual(threaded.logits, single.logits);
  assert.equal(threaded.product.length, 384 * 448);
  assert.deepEqual(threaded.product, single.product);
  assert.equal(threaded.batched.length, 8 * 64 * 80);
  assert.deepEqual(threaded.batched, single.batched);
});

test('threads: a page that is not cross-origin isolated falls back to one thread and says why', async () => {
  const r = await runPage({}, { isolated: false });
  assert.equal(r.error, undefined, r.error);
  assert.equal(r.facts.isolated, false);
  assert.equal(r.threads.build, 'single');
  assert.equal(r.threads.count, 1);
  assert.equal(r.threads.isolated, false);
  assert.equal(r.threads.requested, r.facts.hw, "'all' is navigator.hardwareConcurrency");
  assert.match(r.threads.reason, /not cross-origin isolated/);
  // the same workload on one thread gives the same results
  assert.deepEqual(r.logits, single.logits);
});

test('threads: a GPU backend asked for by name loads the single-threaded build unless threads are asked for', async () => {
  const page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const rt = await pg.init({ backend: 'webgl', allowSoftware: true });
    return { isolated: self.crossOriginIsolated, backend: rt.backend, threads: rt.report.threads };
  });
  await page.close();
  assert.equal(r.isolated, true);
  assert.equal(r.backend, 'webgl');
  assert.deepEqual({ ...r.threads, reason: undefined }, { count: 1, build: 'single', requested: 1, isolated: true, reason: undefined });
  assert.match(r.threads.reason, /the webgl backend runs its kernels on the GPU/);
  // asked for by name, threads still load the threaded build on a GPU backend
  const asked = await runPage({ backend: 'webgl', allowSoftware: true, threads: 2 });
  assert.equal(asked.error, undefined, asked.error);
  assert.equal(asked.threads.build, 'threaded');
});

test('threads: a bad thread count is a typed error', async () => {
  const r = await runPage({ threads: 0 });
  assert.match(r.error, /threads must be 'all' or an integer from 1 to 64/);
  assert.equal(typeof r.kind, 'string');
});

test('threads: after a crash the fresh instance gets its own workers and computes correctly', async () => {
  const page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const rt = await pg.init({ backend: 'cpu', threads: 3 });
    let kind = null;
    try {
      await pg.__testPanic('threads test');
    } catch (e) {
      kind = e.kind;
    }
    // a product large enough to be split by rows, on the fresh instance
    const m = pg.tensor(new Float32Array(256 * 256).fill(1), [256, 256]);
    const d = await pg.matmul(m, m).data();
    // instance 1 is the glue copy the runtime replaced the dead instance with (instance.js)
    const fresh = await import('/pkg/pixelgrad_web_threads.js?instance=1');
    for (let i = 0; i < 200 && fresh.cpuThreads() < 3; i++) await new Promise((res) => setTimeout(res, 10));
    return { build: rt.report.threads.build, kind, ok: d.every((v) => v === 256), threads: fresh.cpuThreads() };
  });
  await page.close();
  assert.deepEqual(r, { build: 'threaded', kind: 'panic', ok: true, threads: 3 });
});
