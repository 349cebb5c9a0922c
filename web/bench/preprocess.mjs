// Frames/s of capture + preprocess (a 640x480 camera frame -> 224x224, ImageNet normalisation,
// NCHW, on the device) per backend: pixelgrad's pg.fromPixels vs TF.js 4.22.0's
// tf.browser.fromPixels + tf.image.resizeBilinear (half-pixel centres) + normalisation +
// transpose, in one headless Chromium run; the camera also through each library's
// fromPixelsAsync (pixelgrad: VideoFrame.copyTo of the frame's own NV12 / I420 + fromYUV on
// the GPU backends; TF.js: tf.browser.fromPixelsAsync, then the same ops), with a fake camera (SwiftShader for both GPU
// backends, as in run.mjs). Each measurement: 10 warm-up frames, then N frames back to back,
// the last one read (so every queued frame has finished); frames/s = N / time. Both libraries
// run in their own page.
//
//   node web/bench/preprocess.mjs [--frames N] [--json FILE]     (web/pkg built, npm ci in web/bench)
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
const FRAMES = Number(opt('--frames', 60));

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
    let oneAsync;
    let info;
    if (lib === 'pixelgrad') {
      const pg = await import('/pkg/index.js');
      const rt = await pg.init({ backend, allowSoftware: true });
      info = rt.report.adapter;
      const opts = { size: [224, 224], mean, std, layout: 'nchw', antialias };
      one = (src) => pg.fromPixels(src, opts);
      oneAsync = (src) => pg.fromPixelsAsync(src, opts);
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
      // importExternalTexture (TF.js's default for video on WebGPU) destroys the GPUDevice in
      // this Chromium with SwiftShader (probe/external.mjs); pixelgrad avoids it too.
      tf.env().set('WEBGPU_IMPORT_EXTERNAL_TEXTURE', false);
      await tf.setBackend(backend === 'cpu' ? 'wasm' : backend);
      await tf.ready();
      info = tf.getBackend();
      const m = tf.tensor1d(mean);
      const s = tf.tensor1d(std);
      const prep = (px) => tf.tidy(() => tf.image.resizeBilinear(px, [224, 224], false, true).div(255).sub(m).div(s).transpose([2, 0, 1]).expandDims(0));
      one = (src) => tf.tidy(() => prep(tf.browser.fromPixels(src)));
      oneAsync = async (src) => {
        const px = await tf.browser.fromPixelsAsync(src);
        const t = prep(px);
        px.dispose();
        return t;
      };
    }
    const run = async (src, f = one) => {
      for (let i = 0; i < 10; i++) {
        const t = await f(src);
        await t.data();
        t.dispose();
      }
      const t0 = performance.now();
      let t = null;
      for (let i = 0; i < frames; i++) {
        if (t) t.dispose();
        t = await f(src);
      }
      const v = await t.data();
      const ms = performance.now() - t0;
      t.dispose();
      return { fps: (1000 * frames) / ms, check: v[0] };
    };
    const camera = await run(video);
    const cameraAsync = await run(video, oneAsync);
    const still = await run(canvas);
    stream.getTracks().forEach((t) => t.stop());
    return { info, camera: camera.fps, cameraAsync: cameraAsync.fps, canvas: still.fps, sample: [camera.check, cameraAsync.check, still.check] };
  }, { lib, backend, frames, antialias });
}

const started = new Date().toISOString();
const camera = fakeCamera(640, 480);
const server = await startServer(webRoot);
const flags = camera.flags;
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
        const f = (v) => v.toFixed(1).padStart(7);
        console.log(`${backend.padEnd(7)} ${name.padEnd(28)} camera ${f(r.camera)}   camera async ${f(r.cameraAsync)}   canvas ${f(r.canvas)} frames/s   (${r.info})`);
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
  const x = (r) => (r == null ? 'n/a (a side failed)' : `${r.toFixed(2)}x`);
  for (const b of ['webgpu', 'webgl', 'cpu']) {
    console.log(`${b}: pixelgrad bilinear / TF.js = ${x(ratio(b, 'camera'))} (camera), ${x(ratio(b, 'cameraAsync'))} (camera, fromPixelsAsync), ${x(ratio(b, 'canvas'))} (canvas)`);
  }
  const out = opt('--json');
  if (out) fs.writeFileSync(out, JSON.stringify({ date: started, machine: machine(path.resolve(webRoot, '..')), chromium: version, frames: FRAMES, rows }, null, 2));
} finally {
  await server.close();
  camera.cleanup();
}
