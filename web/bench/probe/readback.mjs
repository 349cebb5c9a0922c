// Milliseconds to read a model update of P float32 values back from the device, per backend, in
// headless Chromium (SwiftShader for WebGPU and WebGL2), for the parameter counts of the
// federated models (digits MLP 64-256-10, MNIST CNN, MNIST MLP 784-256-10): a [P, 1] device
// tensor made by a matmul, read once to settle, then read N more times (median). The number
// SecAgg+'s "mask on the device?" decision weighs against the CPU's masking
// (crates/pixelgrad-flower/examples/secagg_cost.rs); docs/src/guides/federated.md has both.
// Not a test.
//
//   node web/bench/probe/readback.mjs [--reads N]          (web/pkg built)
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../../tests/harness.mjs';

const i = process.argv.indexOf('--reads');
const READS = i >= 0 ? Number(process.argv[i + 1]) : 9;
const SIZES = { 'digits mlp': 19210, 'mnist cnn': 20490, 'mnist mlp': 203530 };
const server = await startServer(webRoot);
const browser = await launchBrowser([]);
try {
  console.log(`Chromium ${await browserVersion(browser)}`);
  const page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(
    async ({ reads, sizes }) => {
      const pg = await import('/pkg/index.js');
      const out = {};
      for (const backend of ['webgpu', 'webgl', 'cpu']) {
        await pg.init({ backend, allowSoftware: true });
        out[backend] = {};
        for (const [name, p] of Object.entries(sizes)) {
          const x = new Float32Array(p);
          for (let k = 0; k < p; k++) x[k] = ((k % 97) - 48) * 1e-3;
          const t = pg.matmul(pg.tensor(x, [p, 1]), pg.tensor(new Float32Array([1]), [1, 1]));
          await t.data();
          const ms = [];
          for (let k = 0; k < reads; k++) {
            const t0 = performance.now();
            await t.data();
            ms.push(performance.now() - t0);
          }
          ms.sort((a, b) => a - b);
          out[backend][name] = { params: p, readbackMs: ms[ms.length >> 1] };
          t.dispose();
        }
      }
      return out;
    },
    { reads: READS, sizes: SIZES },
  );
  console.log(JSON.stringify(r, null, 1));
} finally {
  await browser.close();
  await server.close();
}
