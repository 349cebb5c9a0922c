// Where one model's inference time goes in Chromium: the page's JavaScript/wasm CPU profile
// (Chrome DevTools Protocol `Profiler`) over a few seconds of back-to-back runs, as self time
// per function, most first. Diagnostics, not a benchmark (the profiler slows everything).
//
//   node web/bench/probe/profile.mjs [--lib pixelgrad|ort] [--backend cpu|wasm|webgl|webgpu]
//        [--model ppocr-cls] [--seconds 4] [--top 30]
//
// Needs what `cargo xtask bench --inference` builds (web/pkg, web/bench/models/).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const a = { lib: 'pixelgrad', backend: 'cpu', model: 'ppocr-cls', seconds: 4, top: 30 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = argv[i].replace(/^--/, '');
  if (!(key in a) || i + 1 >= argv.length) throw new Error(`usage: see the top of ${path.basename(fileURLToPath(import.meta.url))}`);
  a[key] = typeof a[key] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
}
const models = JSON.parse(fs.readFileSync(path.join(here, '..', 'models', 'models.json'), 'utf8'));
const m = models.find((x) => x.name === a.model);
if (!m) throw new Error(`no model ${a.model} in web/bench/models/models.json (have: ${models.map((x) => x.name).join(', ')})`);

const server = await startServer(webRoot);
const browser = await launchBrowser();
try {
  const page = await newPage(browser);
  await page.goto(`${server.url}/bench/infer.html`);
  await page.waitForFunction(() => window.pgInferReady === true);
  await page.evaluate(([l, b]) => window.pgInfer.init(l, b), [a.lib, a.backend]);
  await page.evaluate((mm) => window.pgInfer.load(mm), m);
  await page.evaluate(() => window.pgInfer.time({ budgetMs: 1500, minRuns: 1, maxRuns: 1000 }));
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  const times = await page.evaluate((ms) => window.pgInfer.time({ budgetMs: ms, minRuns: 1, maxRuns: 100000 }), a.seconds * 1000);
  const { profile } = await cdp.send('Profiler.stop');
  const self = new Map();
  const dt = profile.timeDeltas;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  let total = 0;
  profile.samples.forEach((id, k) => {
    const n = byId.get(id);
    const f = n.callFrame;
    const name = f.functionName || `(anonymous ${path.basename(f.url || '')}:${f.lineNumber})`;
    const us = dt[k] ?? 0;
    self.set(name, (self.get(name) ?? 0) + us);
    total += us;
  });
  const sorted = [...times].sort((x, y) => x - y);
  console.log(`${a.lib} ${a.backend} ${a.model}: ${times.length} runs, median ${sorted[sorted.length >> 1].toFixed(2)} ms (profiled)`);
  for (const [name, us] of [...self.entries()].sort((x, y) => y[1] - x[1]).slice(0, a.top)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)} %  ${name.slice(0, 140)}`);
  }
} finally {
  await browser.close();
  await server.close();
}
