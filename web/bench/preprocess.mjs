// Frames/s of capture + preprocess (a 640x480 camera frame -> 224x224, ImageNet normalisation,
// NCHW, on the device) per backend: pixelgrad's pg.fromPixels vs TF.js 4.22.0's
// tf.browser.fromPixels + tf.image.resizeBilinear (half-pixel centres) + normalisation +
// transpose, in one headless Chromium run with a fake camera (SwiftShader for both GPU
// backends, as in run.mjs). Each measurement: 10 warm-up frames, then N frames back to back,
// the last one read (so every queued frame has finished); frames/s = N / time. Both libraries
// run in their own page.
//
//   node web/bench/preprocess.mjs [--frames N] [--json FILE]     (web/pkg built, npm ci in web/bench)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../tests/harness.mjs';

const args = process.argv.slice(2);
const opt = (k, d) => {
  const i = args.indexOf(k);
  return i >= 0 ? args[i + 1] : d;
};
const FRAMES = Number(opt('--frames', 60));
const W = 640;
const H = 480;

function writeY4m(file) {
  const y = Buffer.alloc(W * H);
  const u = Buffer.alloc((W / 2) * (H / 2), 110);
  const v = Buffer.alloc((W / 2) * (H / 2), 150);
  for (let r = 0; r < H; r++) for (let c = 0; c < W; c++) y[r * W + c] = 16 + ((c + 2 * r) % 220);
  const parts = [Buffer.from(`YUV4MPEG2 W${W} H${H} F30:1 Ip A1:1 C420jpeg\n`)];
  for (let i = 0; i < 4; i++) parts.push(Buffer.from('FRAME\n'), y, u, v);
  fs.writeFileSync(file, Buffer.concat(parts));
}

/** In the page: frames/s of `lib` on `backend` from the camera (and from a canvas copy of a frame). */
async function measure(page, lib, backend, frames, antialias) {
  return page.evaluate(async ({ lib, backend, frames, antialias }) => {
    const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
    const video = document.createElement('video');
    video.muted = true;
    video.srcObject = stream;
    await video.play();
    while (video.readyState < 2) await new Promise((r) => setTimeout(r, 20));
    const canvas = document.createElement('canvas');
    canvas.width = video.videoWidth;
    canvas.height = video.videoHeight;
    canvas.getContext('2d').drawImage(video, 0, 0);
    const mean = [0.485, 0.456, 0.406];
    const std = [0.229, 0.224, 0.225];
    let one;
    let info;
    if (lib === 'pixelgrad') {
      const pg = await import('/pkg/index.js');
      const rt = await pg.init({ backend, allowSoftware: true });
      info = rt.report.adapter;
      one = (src) => pg.fromPixels(src, { size: [224, 224], mean, std, layout: 'nchw', antialias });
    } else {
      const load = (src) => new Promise((res, rej) => {
        const s = document.createElement('script');
        s.src = src;
        s.onload = res;
        s.onerror = () => rej(new Error(src));
        document.head.appendChild(s);
      });
      const base = '/bench/node_modules/@tensorflow';
      await load(`${base}/tfjs/dist/tf.min.js`);
      await load(`${base}/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js`);
      await load(`${base}/tfjs-backend-wasm/dist/tf-backend-wasm.min.js`);
      const tf = window.tf;
      tf.wasm.setWasmPaths(`${base}/tfjs-backend-wasm/dist/`);
      await tf.setBackend(backend === 'cpu' ? 'wasm' : backend);
      await tf.ready();
      info = tf.getBackend();
      const m = tf.tensor1d(mean);
      const s = tf.tensor1d(std);
      one = (src) => tf.tidy(() => tf.image.resizeBilinear(tf.browser.fromPixels(src), [224, 224], false, true).div(255).sub(m).div(s).transpose([2, 0, 1]).expandDims(0));
    }
    const run = async (src) => {
      for (let i = 0; i < 10; i++) {
        const t = one(src);
        await t.data();
        t.dispose();
      }
      const t0 = performance.now();
      let t = null;
      for (let i = 0; i < frames; i++) {
        if (t) t.dispose();
        t = one(src);
      }
      const v = await t.data();
      const ms = performance.now() - t0;
      t.dispose();
      return { fps: (1000 * frames) / ms, check: v[0] };
    };
    const camera = await run(video);
    const still = await run(canvas);
    stream.getTracks().forEach((t) => t.stop());
    return { info, camera: camera.fps, canvas: still.fps, sample: [camera.check, still.check] };
  }, { lib, backend, frames, antialias });
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-preprocess-'));
const y4m = path.join(tmp, 'frame.y4m');
writeY4m(y4m);
const server = await startServer(webRoot);
const flags = ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${y4m}`];
const rows = [];
let version = '';
// pixelgrad twice: its default (antialiased above 2x shrink, every source pixel counts) and
// plain bilinear ('never'), which is what TF.js's resizeBilinear computes.
const sides = [['pixelgrad', 'auto'], ['pixelgrad', 'never'], ['tfjs', null]];
try {
  for (const backend of ['webgpu', 'webgl', 'cpu']) {
    for (const [lib, aa] of sides) {
      // One browser per measurement: the libraries never share a GPU process state.
      const browser = await launchBrowser(flags);
      version = await browserVersion(browser);
      const page = await newPage(browser);
      await page.goto(`${server.url}/tests/pages/blank.html`);
      const name = aa ? `${lib} (antialias ${aa})` : lib;
      try {
        const r = await measure(page, lib, backend, FRAMES, aa);
        rows.push({ backend, lib: name, ...r });
        console.log(`${backend.padEnd(7)} ${name.padEnd(28)} camera ${r.camera.toFixed(1).padStart(7)} frames/s   canvas ${r.canvas.toFixed(1).padStart(7)} frames/s   (${r.info})`);
      } catch (e) {
        rows.push({ backend, lib: name, error: e.message });
        console.log(`${backend.padEnd(7)} ${name.padEnd(28)} error: ${e.message.split('\n')[0]}`);
      }
      await browser.close();
    }
  }
  const ratio = (b, k) => {
    const p = rows.find((r) => r.backend === b && r.lib === 'pixelgrad (antialias never)');
    const t = rows.find((r) => r.backend === b && r.lib === 'tfjs');
    return p && t && p[k] && t[k] ? p[k] / t[k] : null;
  };
  for (const b of ['webgpu', 'webgl', 'cpu']) console.log(`${b}: pixelgrad bilinear / TF.js = ${ratio(b, 'camera')?.toFixed(2)}x (camera), ${ratio(b, 'canvas')?.toFixed(2)}x (canvas)`);
  const out = opt('--json');
  if (out) fs.writeFileSync(out, JSON.stringify({ chromium: version, frames: FRAMES, rows }, null, 2));
} finally {
  await server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
