// Where a WebGL training step's time goes in Chromium, per draw. Diagnostics, not a benchmark.
//
// It needs an instrumented package: draws-instrument.patch makes every WebGL draw, while
// `globalThis.__pgTime` is true, read one pixel before and after it (a readPixels waits for
// the GPU process; gl.finish() in Chromium does not) and push `[label, ms]` onto
// `globalThis.__pgTimes`. Each time includes that round trip (~0.35-0.5 ms on SwiftShader:
// the smallest draws show it), and the synchronisation stops draws overlapping, so the sum
// is above the untimed step. Never commit the patched build.
//
//   git apply web/bench/probe/draws-instrument.patch && cargo xtask build-wasm
//   node web/bench/probe/draws.mjs [mnist-mlp | cnn | seed-mlp]
//   git checkout crates/pixelgrad-webgl/src/launch.rs && cargo xtask build-wasm
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';
const workload = process.argv[2] ?? 'mnist-mlp';
const server = await startServer(webRoot);
const browser = await launchBrowser();
try {
  const page = await newPage(browser);
  await page.goto(`${server.url}/bench/page.html`);
  await page.waitForFunction(() => window.pgBenchReady === true);
  await page.evaluate(() => window.pgBench.init('pixelgrad', 'webgl'));
  const out = await page.evaluate(async (w) => {
    const side = await import('./lib/pixelgrad.mjs');
    const s = side.session(w);
    if (s.prepare) await s.prepare();
    await s.setup();
    await s.steps(50);
    // untimed rate
    let t0 = performance.now();
    await s.steps(50);
    const plain = (performance.now() - t0) / 50;
    globalThis.__pgTimes = [];
    globalThis.__pgTime = true;
    t0 = performance.now();
    await s.steps(50);
    const timed = (performance.now() - t0) / 50;
    globalThis.__pgTime = false;
    return { plain, timed, times: globalThis.__pgTimes };
  }, workload);
  const agg = new Map();
  for (const [l, ms] of out.times) agg.set(l, (agg.get(l) ?? [0, 0]).map((v, i) => v + (i ? 1 : ms)));
  const steps = 50;
  let sum = 0;
  const rows = [...agg].map(([l, [ms, n]]) => [l, ms / steps, n / steps]).sort((a, b) => b[1] - a[1]);
  for (const [l, ms, n] of rows) { sum += ms; console.log(`${ms.toFixed(3).padStart(8)} ms  x${n.toFixed(2)}  ${l}`); }
  console.log(`sum of draws ${sum.toFixed(2)} ms/step; step untimed ${out.plain.toFixed(2)} ms, timed ${out.timed.toFixed(2)} ms; draws/step ${(out.times.length / steps).toFixed(1)}`);
} finally {
  await browser.close();
  server.close();
}
