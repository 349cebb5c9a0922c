// Frames/s of pg.fromPixels per dtype (float32 / float16 / uint8) per backend in headless
// Chromium (SwiftShader for WebGPU and WebGL2): a 640x480 canvas → 224x224, NCHW (float32 / float16 with
// ImageNet mean/std; uint8 without), 10 warm-up frames, then N back to back with the last one
// read. Not a test.
//
//   node web/bench/probe/dtype.mjs [--frames N]          (web/pkg built)
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../../tests/harness.mjs';

const i = process.argv.indexOf('--frames');
const FRAMES = i >= 0 ? Number(process.argv[i + 1]) : 60;
const server = await startServer(webRoot);
const browser = await launchBrowser([]);
try {
  console.log(`Chromium ${await browserVersion(browser)}`);
  const page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(async (frames) => {
    const pg = await import('/pkg/index.js');
    const c = document.createElement('canvas');
    c.width = 640;
    c.height = 480;
    const img = new ImageData(640, 480);
    for (let k = 0; k < 640 * 480; k++) {
      img.data[4 * k] = k % 251;
      img.data[4 * k + 1] = (k >> 3) % 253;
      img.data[4 * k + 2] = (k * 7) % 255;
      img.data[4 * k + 3] = 255;
    }
    c.getContext('2d').putImageData(img, 0, 0);
    const norm = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      out[backend] = {};
      for (const dtype of ['float32', 'float16', 'uint8']) {
        const opts = { size: [224, 224], layout: 'nchw', dtype, ...(dtype === 'uint8' ? {} : norm) };
        for (let k = 0; k < 10; k++) {
          const t = pg.fromPixels(c, opts);
          await t.data();
          t.dispose();
        }
        const t0 = performance.now();
        let t = null;
        for (let k = 0; k < frames; k++) {
          if (t) t.dispose();
          t = pg.fromPixels(c, opts);
        }
        await t.data();
        out[backend][dtype] = (1000 * frames) / (performance.now() - t0);
        t.dispose();
      }
    }
    return out;
  }, FRAMES);
  for (const [b, v] of Object.entries(r)) console.log(`${b}: ${Object.entries(v).map(([d, f]) => `${d} ${f.toFixed(1)}`).join(', ')} frames/s`);
} finally {
  await browser.close();
  await server.close();
}
