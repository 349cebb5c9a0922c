// The public JS API of the `pixelgrad` package (web/pkg, built by `cargo xtask build-wasm`),
// exercised in headless Chromium on each backend by name, plus `auto` selection and runtime
// switching. Models are small and epochs few: WebGPU and WebGL run on SwiftShader here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

test('rt.report.caps: what each backend measured when it started', async () => {
  const r = await inPage(async (pg) => {
    const out = {};
    for (const backend of ['cpu', 'webgl', 'webgl1', 'webgpu']) out[backend] = (await pg.init({ backend })).report.caps;
    return out;
  });
  const keys = ['conv', 'int8', 'int8Storage', 'int8Kernel', 'f16Storage', 'shaderF16', 'f16Matmul', 'f16MatmulArithmetic', 'narrowF16', 'reducedPrecision', 'storageMantissaBits', 'arithmetic', 'arithmeticMantissaBits', 'maxTextureSide', 'maxTensorElements', 'training', 'trainingReason'];
  for (const [backend, caps] of Object.entries(r)) assert.deepEqual(Object.keys(caps).sort(), [...keys].sort(), `${backend}: ${JSON.stringify(caps)}`);
  assert.deepEqual(
    [r.cpu.conv, r.cpu.int8, r.cpu.int8Kernel, r.cpu.f16Storage, r.cpu.narrowF16, r.cpu.shaderF16, r.cpu.reducedPrecision],
    [true, true, 'cpu-i32', true, true, null, null],
  );
  // WebGL2: integer textures; WebGL1: bytes stored and widened only, no f16 storage.
  assert.deepEqual([r.webgl.conv, r.webgl.int8, r.webgl.int8Storage, r.webgl.f16Storage], [false, true, true, true]);
  assert.deepEqual([r.webgl1.int8, r.webgl1.int8Storage, r.webgl1.f16Storage, r.webgl1.narrowF16], [false, true, false, false]);
  assert.equal(typeof r.webgpu.shaderF16, 'boolean');
  // What will work: the CPU at full f32, no textures; the GPU backends state their texture limit
  // and a verdict decided from the storage bits they measured.
  assert.deepEqual(
    [r.cpu.storageMantissaBits, r.cpu.arithmetic, r.cpu.arithmeticMantissaBits, r.cpu.maxTextureSide, r.cpu.training],
    [23, 'f32', 23, null, 'reliable'],
  );
  for (const b of ['webgl', 'webgl1', 'webgpu']) {
    const c = r[b];
    assert.ok(c.maxTextureSide > 0 && c.maxTensorElements > 0, `${b}: ${JSON.stringify(c)}`);
    assert.ok([10, 23].includes(c.storageMantissaBits), `${b}: ${JSON.stringify(c)}`);
    assert.ok(['reliable', 'reliable-with-half-measures'].includes(c.training) && c.trainingReason.length > 0, `${b}: ${JSON.stringify(c)}`);
  }
  assert.equal(r.webgl.maxTensorElements, r.webgl.maxTextureSide ** 2 * 4);
  assert.ok(['dot4I8Packed', 'unpacked-i32'].includes(r.webgpu.int8Kernel), r.webgpu.int8Kernel);
});

for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`${backend}: digits MLP trains, evaluates, predicts, saves and reloads`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend });
      const d = pg.data.digits();
      const model = pg.sequential([
        pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }),
        pg.layers.dense({ units: 10 }),
      ]);
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
      const x = pg.tensor(d.train.x, [d.train.n, 64]);
      const y = pg.tensor(d.train.y, [d.train.n]);
      const xt = pg.tensor(d.test.x, [d.test.n, 64]);
      const yt = pg.tensor(d.test.y, [d.test.n]);
      const reads = [];
      const epochLogs = [];
      const h = await model.fit(x, y, {
        epochs: 3, batchSize: 64, shuffle: true, seed: 7, readEvery: 5,
        onBatchEnd: (step, logs) => reads.push([step, logs.loss, logs.accuracy]),
        onEpochEnd: (epoch, logs) => epochLogs.push([epoch, logs.loss]),
        validationData: [xt, yt],
      });
      const ev = await model.evaluate(xt, yt);
      const p = model.predict(xt);
      const probs = await p.data();
      await model.save(`indexeddb://api-${backend}`);
      const listed = (await pg.listModels()).map((m) => m.name);
      const m2 = await pg.loadModel(`indexeddb://api-${backend}`);
      const probs2 = await m2.predict(xt).data();
      const ev2 = await m2.evaluate(xt, yt);
      const canvas = new OffscreenCanvas(1, 1);
      await model.drawWeights(0, canvas);
      const img = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      const colours = new Set();
      for (let i = 0; i < img.length; i += 4) colours.add(`${img[i]},${img[i + 1]},${img[i + 2]}`);
      x.dispose();
      p.dispose();
      m2.dispose();
      return {
        backend: rt.backend, tried: rt.report.tried, maxRelError: rt.report.selfTest.maxRelError,
        history: h.history, reads, epochLogs, ev, ev2, shape: p.shape, probsLen: probs.length,
        same: probs.length === probs2.length && probs.every((v, i) => v === probs2[i]),
        listed, canvas: [canvas.width, canvas.height], colours: colours.size, summary: model.summary(),
      };
    }, backend);
    assert.equal(r.backend, backend);
    assert.deepEqual(r.tried.map((t) => [t.backend, t.ok]), [[backend, true]]);
    assert.ok(r.maxRelError < 1e-3, `self-test error ${r.maxRelError}`);
    assert.equal(r.history.loss.length, 3);
    assert.equal(r.history.valAccuracy.length, 3);
    assert.ok(r.history.loss[2] < r.history.loss[0], `loss ${r.history.loss}`);
    assert.ok(r.reads.length >= 3 && r.reads.every(([s, l, a]) => s > 0 && l > 0 && a >= 0 && a <= 1), JSON.stringify(r.reads));
    assert.deepEqual(r.epochLogs.map((e) => e[0]), [0, 1, 2]);
    assert.ok(r.ev.accuracy >= 0.9, `test accuracy ${r.ev.accuracy}`);
    assert.deepEqual(r.shape, [359, 10]);
    assert.equal(r.probsLen, 3590);
    assert.ok(r.same, 'reloaded model predicts identically');
    assert.ok(Math.abs(r.ev2.accuracy - r.ev.accuracy) < 1e-9);
    assert.ok(r.listed.includes(`api-${backend}`));
    // 32 tiles of 8x8 on a 6-column grid, scaled up; diverging colours, not a flat image.
    assert.ok(r.canvas[0] > 49 && r.canvas[1] > 49, `canvas ${r.canvas}`);
    assert.ok(r.colours > 20, `${r.colours} colours`);
    assert.match(r.summary, /Total params: 2410/);
  });

  test(`${backend}: bad calls throw clear errors and the runtime keeps working`, async () => {
    const r = await inPage(async (pg, backend) => {
      await pg.init({ backend });
      const d = pg.data.digits();
      const model = pg.sequential([pg.layers.dense({ units: 10, inputShape: [64] })]);
      model.compile({ optimizer: pg.optimizers.sgd(0.1), loss: 'softmaxCrossEntropy' });
      const errs = {};
      const catchMsg = async (f) => {
        try {
          await f();
          return 'no error';
        } catch (e) {
          return `${e instanceof Error ? 'Error' : typeof e}: ${e.message}`;
        }
      };
      errs.length = await catchMsg(() => pg.tensor(new Float32Array(5), [2, 3]));
      errs.width = await catchMsg(() => model.predict(pg.tensor(new Float32Array(20), [2, 10])));
      errs.fitWidth = await catchMsg(() => model.fit(pg.tensor(new Float32Array(20), [2, 10]), pg.tensor(new Int32Array([1, 2]), [2])));
      errs.label = await catchMsg(() => model.fit(pg.tensor(new Float32Array(64), [1, 64]), pg.tensor(new Int32Array([12]), [1])));
      errs.layer = await catchMsg(() => model.drawWeights(3, new OffscreenCanvas(1, 1)));
      errs.config = await catchMsg(() => pg.sequential([pg.layers.dense({ units: 4, inputShape: [8, 8, 1] })]));
      const x = pg.tensor(d.test.x, [d.test.n, 64]);
      const y = pg.tensor(d.test.y, [d.test.n]);
      await model.fit(x, y, { epochs: 1, batchSize: 64 });
      const ev = await model.evaluate(x, y);
      const out = await model.predict(pg.tensor(d.test.x.subarray(0, 128), [2, 64])).data();
      return { errs, ev, out: out.length };
    }, backend);
    assert.match(r.errs.length, /^Error: pg\.tensor: 5 values do not fit shape \[2, 3\]/);
    assert.match(r.errs.width, /^Error: predict: (?=.*\[2, 10\])(?=.*\[N, 64\])/);
    assert.match(r.errs.width, new RegExp(backend));
    assert.match(r.errs.fitWidth, /^Error: fit: (?=.*\[2, 10\])(?=.*\[N, 64\])/);
    assert.match(r.errs.label, /^Error: .*label 12/);
    assert.match(r.errs.layer, /^Error: drawWeights: layer index 3 is out of range/);
    assert.match(r.errs.config, /^Error: layer 0 \(dense\).*flatten/);
    assert.ok(Number.isFinite(r.ev.loss) && r.ev.accuracy > 0.1, JSON.stringify(r.ev));
    assert.equal(r.out, 20);
  });

  test(`${backend}: a small conv net (NHWC 8x8x1) trains with decreasing loss`, async () => {
    const r = await inPage(async (pg, backend) => {
      await pg.init({ backend });
      const d = pg.data.digits();
      const n = 512;
      const model = pg.sequential([
        pg.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same', activation: 'relu', inputShape: [8, 8, 1] }),
        pg.layers.maxPooling2d({ poolSize: 2 }),
        pg.layers.flatten(),
        pg.layers.dense({ units: 10 }),
      ]);
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
      const x = pg.tensor(d.train.x.subarray(0, n * 64), [n, 8, 8, 1]);
      const y = pg.tensor(d.train.y.subarray(0, n), [n]);
      const h = await model.fit(x, y, { epochs: 3, batchSize: 64, seed: 1 });
      const out = model.predict(pg.tensor(d.test.x.subarray(0, 64 * 3), [3, 8, 8, 1]));
      const canvas = new OffscreenCanvas(1, 1);
      await model.drawWeights(0, canvas);
      return { loss: h.history.loss, shape: out.shape, canvas: [canvas.width, canvas.height], summary: model.summary() };
    }, backend);
    assert.ok(r.loss[2] < r.loss[0], `loss ${r.loss}`);
    assert.deepEqual(r.shape, [3, 10]);
    assert.ok(r.canvas[0] > 1 && r.canvas[1] > 1);
    assert.match(r.summary, /\[null, 4, 4, 4\]/);
  });
}

for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`${backend}: matmul on resident inputs matches the host product; repeats allocate nothing`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend });
      const [m, k, n] = [5, 7, 3];
      const av = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i + 1));
      const bv = Float32Array.from({ length: k * n }, (_, i) => Math.cos(i * 0.5));
      const want = new Float32Array(m * n);
      for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) want[i * n + j] += av[i * k + p] * bv[p * n + j];
      const a = pg.tensor(av, [m, k]);
      const b = pg.tensor(bv, [k, n]);
      const c1 = pg.matmul(a, b);
      const got = Array.from(await c1.data());
      c1.dispose();
      const warm = pg.matmul(a, b); // warm-up: the pools hold a buffer of each size now
      await warm.data();
      warm.dispose();
      const before = rt.memory();
      const c2 = pg.matmul(a, b);
      await c2.data();
      const after = rt.memory();
      let err = null;
      try {
        pg.matmul(a, a);
      } catch (e) {
        err = e.message;
      }
      return { got, want: Array.from(want), shape: c2.shape, grew: after.allocations - before.allocations, compiled: after.compiles - before.compiles, bytes: after.bytesInUse, err };
    }, backend);
    assert.deepEqual(r.shape, [5, 3]);
    r.got.forEach((g, i) => assert.ok(Math.abs(g - r.want[i]) <= 1e-4 * (1 + Math.abs(r.want[i])), `element ${i}: ${g} vs ${r.want[i]}`));
    // The GPU backends serve repeats from their pools; the CPU backend has no pool.
    if (backend !== 'cpu') assert.equal(r.grew, 0, 'a repeated matmul allocated');
    assert.equal(r.compiled, 0, 'a repeated matmul compiled');
    assert.ok(r.bytes > 0);
    assert.match(r.err, /matmul/i);
    assert.match(r.err, /\[5, 7\]/);
  });
}

test('auto records every try with a reason; allowSoftware takes a software GPU', async () => {
  const r = await inPage(async (pg) => {
    const a = await pg.init({ backend: 'auto' });
    const b = await pg.init({ backend: 'auto', allowSoftware: true });
    return { a: { backend: a.backend, tried: a.report.tried }, b: { backend: b.backend, tried: b.report.tried, adapter: b.report.adapter } };
  });
  for (const rt of [r.a, r.b]) {
    assert.ok(rt.tried.length >= 1);
    assert.ok(rt.tried.every((t) => typeof t.reason === 'string' && t.reason.length > 0), JSON.stringify(rt.tried));
    assert.deepEqual(rt.tried.map((t) => t.backend), ['webgpu', 'webgl', 'webgl1', 'cpu'].slice(0, rt.tried.length));
    assert.equal(rt.tried.at(-1).ok, true);
    assert.ok(rt.tried.slice(0, -1).every((t) => !t.ok));
    assert.equal(rt.backend, rt.tried.at(-1).backend);
  }
  // With the harness's SwiftShader GPUs, auto skips them and says why; allowSoftware takes one.
  assert.notEqual(r.b.backend, 'cpu', JSON.stringify(r.b.tried));
  if (/swiftshader/i.test(r.b.adapter)) {
    assert.equal(r.a.backend, 'cpu', JSON.stringify(r.a.tried));
    assert.ok(r.a.tried.slice(0, -1).every((t) => /software rasteriser/.test(t.reason)), JSON.stringify(r.a.tried));
  }
});

test('auto with measure times the model on every candidate, keeps the fastest and caches the choice', async () => {
  const r = await inPage(async (pg) => {
    localStorage.removeItem('pixelgrad.autoBackend');
    const layers = [pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })];
    const measure = { layers, batchSize: 16 };
    const run = async (slow) => {
      globalThis.__pixelgradTestSlowBackends = slow;
      const rt = await pg.init({ backend: 'auto', allowSoftware: true, measure });
      // the chosen backend trains the measured model
      const m = pg.sequential(layers);
      m.compile({ optimizer: pg.optimizers.sgd(0.1), loss: 'softmaxCrossEntropy' });
      await m.fit(pg.tensor(new Float32Array(16 * 64), [16, 64]), pg.tensor(new Float32Array(16), [16]), { epochs: 1, batchSize: 16 });
      return { backend: rt.backend, measured: rt.report.measured, tried: rt.report.tried };
    };
    const first = await run(['webgpu', 'cpu']);
    const cached = await run(['webgl']); // same model and devices: the cache answers, nothing is timed
    localStorage.setItem('pixelgrad.autoBackend', '{ not json');
    const fresh = await run(['webgl', 'webgpu']);
    let bad = '';
    try {
      await pg.init({ backend: 'auto', measure: { layers: [] } });
    } catch (e) {
      bad = e.message;
    }
    delete globalThis.__pixelgradTestSlowBackends;
    localStorage.removeItem('pixelgrad.autoBackend');
    return { first, cached, fresh, bad };
  });
  const { first, cached, fresh } = r;
  assert.deepEqual(first.measured.timings.map((t) => t.backend), ['webgpu', 'webgl', 'cpu'], JSON.stringify(first.measured));
  assert.equal(first.measured.backend, 'webgl', JSON.stringify(first.measured));
  assert.equal(first.backend, 'webgl');
  assert.equal(first.measured.cached, false);
  assert.ok(first.measured.timings.every((t) => t.steps >= 2 && t.stepMs > 0 && t.warmMs > 0), JSON.stringify(first.measured));
  assert.ok(first.tried.filter((t) => t.backend !== 'webgl' && t.backend !== 'webgl1').every((t) => !t.ok && /slower on this model/.test(t.reason)), JSON.stringify(first.tried));
  assert.equal(cached.backend, 'webgl');
  assert.equal(cached.measured.cached, true);
  assert.equal(fresh.backend, 'cpu', JSON.stringify(fresh.measured));
  assert.equal(fresh.measured.cached, false);
  assert.match(r.bad, /measure must be \{ layers/);
});

test('switching backend retires the old runtime with a clear error', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const m = pg.sequential([pg.layers.dense({ units: 2, inputShape: [3] })]);
    const rt = await pg.init({ backend: 'webgl' });
    let msg = 'no error';
    try {
      m.predict(pg.tensor([1, 2, 3], [1, 3]));
    } catch (e) {
      msg = e.message;
    }
    const m2 = pg.sequential([pg.layers.dense({ units: 2, inputShape: [3] })]);
    const out = await m2.predict(pg.tensor([1, 2, 3], [1, 3])).data();
    return { msg, backend: rt.backend, out: out.length, unknown: await pg.init({ backend: 'metal' }).then(() => 'no error', (e) => e.message) };
  });
  assert.match(r.msg, /predict: .*cpu runtime.*replaced by webgl/);
  assert.equal(r.out, 2);
  assert.match(r.unknown, /unknown backend 'metal'/);
});

test('data helpers: digits and MNIST IDX bytes (raw and gzipped)', async () => {
  const r = await inPage(async (pg) => {
    await pg.loadWasm();
    const d = pg.data.digits();
    const idx = (magic, dims, body) => {
      const head = new DataView(new ArrayBuffer(4 + 4 * dims.length));
      head.setUint32(0, magic);
      dims.forEach((v, i) => head.setUint32(4 + 4 * i, v));
      const out = new Uint8Array(head.byteLength + body.length);
      out.set(new Uint8Array(head.buffer));
      out.set(body, head.byteLength);
      return out;
    };
    const pixels = new Uint8Array(2 * 28 * 28).map((_, i) => i % 256);
    const images = idx(0x803, [2, 28, 28], pixels);
    const labels = idx(0x801, [2], new Uint8Array([3, 7]));
    const gz = async (b) => new Uint8Array(await new Response(new Blob([b]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer());
    const m = pg.data.parseMnist(images, labels);
    const mz = pg.data.parseMnist(await gz(images), await gz(labels));
    let bad = 'no error';
    try {
      pg.data.parseMnist(images.subarray(0, 100), labels);
    } catch (e) {
      bad = e.message;
    }
    const xs = Array.from(d.train.x);
    return {
      version: pg.version, train: d.train.n, test: d.test.n, xlen: d.train.x.length, ylen: d.train.y.length,
      min: Math.min(...xs), max: Math.max(...xs), inputShape: d.inputShape, imageShape: d.imageShape,
      m: { n: m.n, y: Array.from(m.y), x1: m.x[1], xlen: m.x.length, imageShape: m.imageShape },
      same: mz.n === 2 && mz.x.every((v, i) => v === m.x[i]), bad,
    };
  });
  assert.match(r.version, /^\d+\.\d+\.\d+/);
  assert.equal(r.train + r.test, 1797);
  assert.equal(r.xlen, r.train * 64);
  assert.equal(r.ylen, r.train);
  assert.ok(r.min >= 0 && r.max <= 1 && r.max > 0.5);
  assert.deepEqual(r.inputShape, [64]);
  assert.deepEqual(r.imageShape, [8, 8, 1]);
  assert.deepEqual(r.m, { n: 2, y: [3, 7], x1: Math.fround(1 / 255), xlen: 2 * 784, imageShape: [28, 28, 1] });
  assert.ok(r.same, 'gzipped IDX parses to the same data');
  assert.match(r.bad, /images/);
});

test('stopTraining stops fit after the current batch; a second fit keeps the optimizer state', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const d = pg.data.digits();
    const model = pg.sequential([pg.layers.dense({ units: 10, inputShape: [64] })]);
    model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    const x = pg.tensor(d.train.x, [d.train.n, 64]);
    const y = pg.tensor(d.train.y, [d.train.n]);
    const steps = [];
    const h = await model.fit(x, y, {
      epochs: 5, batchSize: 32, readEvery: 1,
      onBatchEnd(step) {
        steps.push(step);
        if (step === 3) model.stopTraining = true;
      },
    });
    const h2 = await model.fit(x, y, { epochs: 1, batchSize: 32 });
    return { steps, epochs: h.history.loss.length, second: h2.history.loss[0], first: h.history.loss[0] };
  });
  assert.deepEqual(r.steps, [1, 2, 3]);
  assert.equal(r.epochs, 1);
  assert.ok(r.second < r.first, `fine-tuning continues: ${r.second} < ${r.first}`);
});
