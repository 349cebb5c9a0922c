// Where a camera-demo frame's time goes per backend, without a camera: fromPixels of a 640x480
// canvas, the ONNX model, softmax + top-3, each timed to a readback on its own, then all three
// chained with one readback at the end (what the demo does per frame). Medians of N frames.
// Not a test.
//
//   node web/bench/probe/stages.mjs [--model mobilenet_v1_050_128.onnx] [--frames N]
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../../tests/harness.mjs';

const arg = (k, d) => {
  const i = process.argv.indexOf(k);
  return i >= 0 ? process.argv[i + 1] : d;
};
const MODEL = arg('--model', 'mobilenet_v1_050_128.onnx');
const FRAMES = Number(arg('--frames', 15));
const server = await startServer(webRoot);
try {
  for (const backend of ['webgpu', 'webgl', 'cpu']) {
    const browser = await launchBrowser([]);
    try {
      const page = await newPage(browser);
      await page.goto(`${server.url}/tests/pages/blank.html`);
      const r = await page.evaluate(
        async ({ backend, model, frames }) => {
          const pg = await import('/pkg/index.js');
          await pg.init({ backend, allowSoftware: true });
          const m = await pg.loadOnnx(new Uint8Array(await (await fetch(`/bench/models/${model}`)).arrayBuffer()));
          const inp = m.inputs[0];
          const size = [inp.shape[2] > 0 ? inp.shape[2] : 224, inp.shape[3] > 0 ? inp.shape[3] : 224];
          const c = document.createElement('canvas');
          c.width = 640;
          c.height = 480;
          const ctx = c.getContext('2d');
          ctx.fillStyle = '#3a7';
          ctx.fillRect(0, 0, 640, 480);
          const opts = { size, fit: 'cover', mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
          const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
          const t = { pixels: [], model: [], post: [], chained: [] };
          const x0 = pg.fromPixels(c, opts);
          for (let i = 0; i < frames + 3; i++) {
            let s = performance.now();
            const x = pg.fromPixels(c, opts);
            await x.data();
            const a = performance.now() - s;
            s = performance.now();
            const out = Object.values(await m.run({ [inp.name]: x0 }))[0];
            await out.data();
            const b = performance.now() - s;
            s = performance.now();
            const { values, indices } = pg.topk(pg.softmax(out), 3);
            await Promise.all([values.data(), indices.data()]);
            const d = performance.now() - s;
            [x, out, values, indices].forEach((v) => v.dispose());
            s = performance.now();
            const x2 = pg.fromPixels(c, opts);
            const out2 = Object.values(await m.run({ [inp.name]: x2 }))[0];
            const k = pg.topk(pg.softmax(out2), 3);
            await Promise.all([k.values.data(), k.indices.data()]);
            const e = performance.now() - s;
            [x2, out2, k.values, k.indices].forEach((v) => v.dispose());
            if (i >= 3) [t.pixels, t.model, t.post, t.chained].forEach((arr, j) => arr.push([a, b, d, e][j]));
          }
          return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, med(v)]));
        },
        { backend, model: MODEL, frames: FRAMES },
      );
      console.log(`${backend.padEnd(7)} fromPixels ${r.pixels.toFixed(1)} ms, model ${r.model.toFixed(1)} ms, softmax+top-3 ${r.post.toFixed(1)} ms, chained ${r.chained.toFixed(1)} ms (${await browserVersion(browser)})`);
    } catch (e) {
      console.log(`${backend}: error ${e.message.split('\n')[0]}`);
    }
    await browser.close();
  }
} finally {
  await server.close();
}
