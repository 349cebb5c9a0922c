// Where a generation's time goes on pixelgrad (issue 42 bench decoders): the prompt run and each
// cached step timed alone, per decoder file, on one backend. One-off probe:
//   node web/bench/probe/generate-steps.mjs [webgpu|cpu]   (needs web/pkg and web/bench/models)
import { startServer, launchBrowser, newPage } from '../../tests/harness.mjs';

const backend = process.argv[2] ?? 'webgpu';
const server = await startServer();
const browser = await launchBrowser();
try {
  const page = await newPage(browser);
  await page.goto(`${server.url}/bench/infer.html`);
  const r = await page.evaluate(async (backend) => {
    const pg = await import('/pkg/index.js');
    await pg.init({ backend, allowSoftware: true });
    const get = async (f) => new Uint8Array(await (await fetch(`/bench/models/${f}`)).arrayBuffer());
    const prompt = new Int32Array((await get('gpt_h256.prompt.i32')).buffer);
    const out = {};
    for (const [label, stepFile, prefillFile, merged] of [
      ['4-bit', 'gpt_h256_l4_nbits4.onnx', 'gpt_h256_l4_prefill_nbits4.onnx', false],
      ['merged f32', 'gpt_h256_l4_merged.onnx', null, true],
    ]) {
      const step = await pg.loadOnnx(await get(stepFile));
      const prefill = prefillFile ? await pg.loadOnnx(await get(prefillFile)) : step;
      const times = [];
      for (let rep = 0; rep < 2; rep++) {
        const row = [];
        const feeds = { input_ids: pg.tensor(prompt, [1, 16]) };
        const past = () => pg.tensor(new Float32Array(256), [1, 4, 1, 64]);
        if (merged) {
          for (let l = 0; l < 4; l++) for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = past();
          feeds.use_cache_branch = pg.tensor(new Int32Array([0]), [1]);
        }
        let t = performance.now();
        let outs = await prefill.run(feeds);
        let logits = await outs.logits.data();
        row.push(performance.now() - t);
        for (let s = 0; s < 8; s++) {
          let best = logits.length - 512;
          for (let k = best; k < logits.length; k++) if (logits[k] > logits[best]) best = k;
          const next = { input_ids: pg.tensor(new Int32Array([best - (logits.length - 512)]), [1, 1]) };
          for (let l = 0; l < 4; l++) for (const kv of ['key', 'value']) next[`past_key_values.${l}.${kv}`] = outs[`present.${l}.${kv}`];
          if (merged) next.use_cache_branch = pg.tensor(new Int32Array([1]), [1]);
          t = performance.now();
          const o2 = await step.run(next);
          logits = await o2.logits.data();
          row.push(performance.now() - t);
          Object.values(outs).forEach((x) => x.dispose());
          outs = o2;
        }
        Object.values(outs).forEach((x) => x.dispose());
        times.push(row.map((x) => Math.round(x)));
      }
      out[label] = { times, info: { path: step.info?.path, weightStorage: step.info?.weightStorage } };
    }
    return out;
  }, backend);
  console.log(backend, JSON.stringify(r, null, 1));
} finally {
  await browser.close();
  await server.close();
}
