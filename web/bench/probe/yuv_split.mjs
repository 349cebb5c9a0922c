// Where fromYUV's time goes, without a camera: a synthetic 640x480 NV12 frame against the same
// frame as RGBA ImageData, per backend, 224x224 NCHW mean/std, bilinear and antialiased;
// frames/s with the last result read. Not a test.
//
//   node web/bench/probe/yuv_split.mjs [--frames N]
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';

const i = process.argv.indexOf('--frames');
const FRAMES = i >= 0 ? Number(process.argv[i + 1]) : 40;
const server = await startServer(webRoot);
try {
  for (const backend of ['webgpu', 'webgl', 'cpu']) {
    const browser = await launchBrowser([]);
    try {
      const page = await newPage(browser);
      await page.goto(`${server.url}/tests/pages/blank.html`);
      const r = await page.evaluate(
        async ({ backend, frames }) => {
          const pg = await import('/pkg/index.js');
          await pg.init({ backend, allowSoftware: true });
          const [w, h] = [640, 480];
          const y = new Uint8Array(w * h).map((_, k) => 16 + ((k * 37) % 220));
          const uv = new Uint8Array(w * h / 2).map((_, k) => 40 + ((k * 53) % 180));
          const frame = { format: 'NV12', width: w, height: h, y, uv };
          const rgba = new Uint8ClampedArray(w * h * 4).map((_, k) => (k * 31) % 256);
          const img = new ImageData(rgba, w, h);
          const base = { size: [224, 224], mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
          const rate = async (one) => {
            for (let k = 0; k < 3; k++) {
              const t = one();
              await t.data();
              t.dispose();
            }
            const t0 = performance.now();
            let t = null;
            for (let k = 0; k < frames; k++) {
              if (t) t.dispose();
              t = one();
            }
            await t.data();
            t.dispose();
            return (1000 * frames) / (performance.now() - t0);
          };
          const out = {};
          for (const aa of ['never', 'auto']) {
            const opts = { ...base, antialias: aa };
            out[`yuv ${aa}`] = await rate(() => pg.fromYUV(frame, opts));
            out[`rgba ${aa}`] = await rate(() => pg.fromPixels(img, opts));
            out[`yuv full-size ${aa}`] = await rate(() => pg.fromYUV(frame, { antialias: aa }));
          }
          return out;
        },
        { backend, frames: FRAMES },
      );
      console.log(backend.padEnd(7), Object.entries(r).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', '));
    } catch (e) {
      console.log(`${backend}: error ${e.message.split('\n')[0]}`);
    }
    await browser.close();
  }
} finally {
  await server.close();
}
