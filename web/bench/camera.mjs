// End-to-end frames/s of the camera demo (web/demo/camera.html) per backend, in headless
// Chromium with a fake camera playing a 640x480 .y4m this script writes: the demo's own loop
// (fromPixels of the video, the imported ONNX model, softmax + top-3 on the device, the top-3
// read back) with a model from web/bench/models (built by `cargo xtask bench --inference` or
// `python web/bench/make_models.py`). Per (backend, model): load the model through the demo's
// loadOnnx, 3 s uncounted, then the frames the loop completes in --seconds; the demo's own
// per-stage averages (capture + preprocess as queued, inference to the outputs, post-process
// + read) come along. Not a test; one browser per measurement.
//
//   node web/bench/camera.mjs [--seconds S] [--models a,b] [--backends webgpu,webgl,cpu] [--json FILE]
import fs from 'node:fs';
import path from 'node:path';
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../tests/harness.mjs';
import { machine } from './lib/machine.mjs';
import { fakeCamera } from './lib/camera.mjs';

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(k);
  return i >= 0 ? args[i + 1] : d;
};
const SECONDS = Number(opt('--seconds', 10));
const BACKENDS = opt('--backends', 'webgpu,webgl,cpu').split(',');
const MODELS = opt('--models', 'mobilenet_v1_050_128.onnx,ppocr_cls.onnx').split(',');

for (const m of MODELS) {
  if (!fs.existsSync(path.join(webRoot, 'bench', 'models', m))) {
    console.error(`web/bench/models/${m} is missing: run python web/bench/make_models.py (or cargo xtask bench --inference) first`);
    process.exit(2);
  }
}

const started = new Date().toISOString();
const camera = fakeCamera(640, 480);
const server = await startServer(webRoot);
const flags = camera.flags;
const rows = [];
let version = '';
try {
  for (const backend of BACKENDS) {
    for (const model of MODELS) {
      const browser = await launchBrowser(flags);
      version = await browserVersion(browser);
      const page = await newPage(browser);
      try {
        await page.goto(`${server.url}/demo/camera.html?backend=${backend}&software=1`);
        await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 120000 });
        const state = await page.evaluate(() => document.body.dataset.state);
        if (state !== 'ready') throw new Error(await page.evaluate(() => document.getElementById('status').textContent));
        const r = await page.evaluate(
          async ({ model, seconds }) => {
            const demo = window.cameraDemo;
            const bytes = new Uint8Array(await (await fetch(`/bench/models/${model}`)).arrayBuffer());
            await demo.loadOnnx(bytes);
            const wait = (ms) => new Promise((res) => setTimeout(res, ms));
            await wait(3000);
            const s = demo.state.stats;
            const f0 = s.frames;
            const t0 = performance.now();
            await wait(1000 * seconds);
            const frames = s.frames - f0;
            const ms = performance.now() - t0;
            return {
              fps: (1000 * frames) / ms,
              frames,
              preprocessMs: s.preprocess,
              inferenceMs: s.inference,
              readMs: s.read,
              input: demo.state.onnx.size,
              status: document.getElementById('status').textContent,
            };
          },
          { model, seconds: SECONDS },
        );
        rows.push({ backend, model, ...r });
        console.log(
          `${backend.padEnd(7)} ${model.padEnd(28)} ${r.fps.toFixed(1).padStart(6)} frames/s  (preprocess ${r.preprocessMs.toFixed(1)} ms, inference ${r.inferenceMs.toFixed(1)} ms, post-process + read ${r.readMs.toFixed(1)} ms; input ${r.input.join('x')})`,
        );
      } catch (e) {
        rows.push({ backend, model, error: e.message });
        console.log(`${backend.padEnd(7)} ${model.padEnd(28)} error: ${e.message.split('\n')[0]}`);
      }
      await browser.close();
    }
  }
  const out = opt('--json');
  if (out) fs.writeFileSync(out, JSON.stringify({ date: started, machine: machine(path.resolve(webRoot, '..')), chromium: version, seconds: SECONDS, rows }, null, 2));
} finally {
  await server.close();
  camera.cleanup();
}
