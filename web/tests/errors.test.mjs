// Errors as data (issue 17): every bad input gives a `PixelgradError` (a subclass of Error,
// exported) with `kind`, `op`, `shapes` and `backend`, the message as before, and the module
// keeps working (the next valid call succeeds). An operation in flight when its model or tensor
// is disposed completes or rejects with such an error, never silently does nothing.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`${backend}: every bad input is a PixelgradError with its fields, and the next valid call works`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend });
      const model = pg.sequential([pg.layers.dense({ units: 8, inputShape: [4], activation: 'relu' }), pg.layers.dense({ units: 3 })]);
      model.compile({ optimizer: 'sgd', loss: 'softmaxCrossEntropy' });
      const good = pg.tensor(new Float32Array(8).fill(0.5), [2, 4]);
      const labels = pg.tensor(new Int32Array([0, 2]), [2]);
      const cases = {
        tensorFill: () => pg.tensor([1, 2, 3, 4, 5], [2, 3]),
        ragged: () => pg.tensor([[1, 2], [3]]),
        zero: () => pg.tensor([], [0]),
        nan: () => pg.tensor([1, NaN], { check: true }),
        predictWidth: () => model.predict(pg.tensor(new Float32Array(20), [2, 10])),
        fitWidth: () => model.fit(pg.tensor(new Float32Array(20), [2, 10]), labels),
        fitLabel: () => model.fit(good, pg.tensor(new Int32Array([0, 7]), [2])),
        fitTargets: () => model.fit(good, pg.tensor(new Float32Array(8), [2, 4])),
        fitEpochs: () => model.fit(good, labels, { epochs: -1 }),
        matmul: () => pg.matmul(pg.tensor(new Float32Array(6), [2, 3]), pg.tensor(new Float32Array(20), [4, 5])),
        layer: () => model.drawWeights(7, new OffscreenCanvas(1, 1)),
        config: () => pg.sequential([pg.layers.conv2d({ filters: 2, kernelSize: 3, inputShape: [4, 4, 1] })]).compile({ loss: 'mse' }),
        optimizer: () => model.compile({ optimizer: 'nope' }),
        setWeights: () => model.setWeights({ nope: new Float32Array(1) }),
        load: () => pg.loadModel('indexeddb://does-not-exist'),
        url: () => model.save('ftp://x'),
        backendName: () => pg.init({ backend: 'metal' }),
        restoreNone: () => pg.sequential([pg.layers.dense({ units: 2, inputShape: [2] })]).restore(),
        layerOpts: () => pg.layers.dense(5),
        learningRate: () => pg.optimizers.adam(-1),
        fromPixels: () => pg.fromPixels(null),
        topk: () => pg.topk(pg.tensor([1, 2, 3]), 0),
        onnx: () => pg.loadOnnx(new Uint8Array([1, 2, 3])),
        checkpointEvery: () => model.fit(good, labels, { checkpointEvery: -2 }),
        autosaveUrl: () => model.fit(good, labels, { autosave: 'downloads://x' }),
      };
      const out = {};
      for (const [name, f] of Object.entries(cases)) {
        let e = null;
        try {
          await f();
        } catch (err) {
          e = err;
        }
        // the next valid call succeeds
        const p = await model.predict(good).data();
        out[name] = e && {
          pg: e instanceof pg.PixelgradError,
          error: e instanceof Error,
          name: e.name,
          kind: e.kind,
          op: e.op,
          shapes: e.shapes,
          backend: e.backend,
          message: e.message,
          next: p.length,
        };
      }
      // after all that, training still works
      const h = await model.fit(good, labels, { epochs: 3, batchSize: 2 });
      return { out, backend: rt.backend, trained: h.history.loss.length };
    }, backend);
    for (const [name, e] of Object.entries(r.out)) {
      assert.ok(e, `${name}: no error`);
      assert.ok(e.pg && e.error, `${name}: not a PixelgradError: ${JSON.stringify(e)}`);
      assert.equal(e.name, 'PixelgradError', name);
      assert.equal(typeof e.kind, 'string', name);
      assert.ok(Array.isArray(e.shapes), name);
      assert.equal(e.next, 6, `${name}: the next predict works`);
    }
    const o = r.out;
    // messages unchanged
    assert.match(o.tensorFill.message, /^pg\.tensor: 5 values do not fit shape \[2, 3\]/);
    assert.equal(o.tensorFill.op, 'pg.tensor');
    assert.equal(o.tensorFill.kind, 'invalid');
    // engine shape errors carry op, shapes and backend as data
    assert.equal(o.predictWidth.kind, 'shape');
    assert.equal(o.predictWidth.op, 'predict');
    assert.deepEqual(o.predictWidth.shapes, [[2, 10]]);
    assert.match(o.predictWidth.backend, new RegExp(backend));
    assert.match(o.predictWidth.message, /^predict: the model expects input \[N, 4\] \(input shapes \[2, 10\]; backend /);
    assert.equal(o.fitWidth.op, 'fit');
    assert.deepEqual(o.fitWidth.shapes, [[2, 10]]);
    assert.equal(o.matmul.kind, 'shape');
    assert.equal(o.matmul.op, 'matmul');
    assert.deepEqual(o.matmul.shapes, [[2, 3], [4, 5]]);
    assert.match(o.fitLabel.message, /label 7/);
    assert.equal(o.fitLabel.kind, 'invalid');
    assert.match(o.fitTargets.message, /\[N, 4\].*\[N, 3\]|\[N, 3\].*\[N, 4\]/);
    assert.match(o.layer.message, /^drawWeights: layer index 7 is out of range/);
    assert.equal(o.backendName.op, 'pg.init');
    assert.equal(r.trained, 3);
  });

  if (backend !== 'cpu') {
    test(`${backend}: an operation in flight when its model or tensor is disposed completes or rejects with a PixelgradError`, async () => {
      const r = await inPage(async (pg, backend) => {
        await pg.init({ backend });
        const outcome = async (p, check) => {
          try {
            await p;
            return { done: true, ok: await check() };
          } catch (e) {
            return { done: false, pg: e instanceof pg.PixelgradError, kind: e.kind, message: e.message };
          }
        };
        const model = pg.sequential([pg.layers.dense({ units: 6, inputShape: [16] }), pg.layers.dense({ units: 2 })], { seed: 4 });
        model.compile({ optimizer: 'sgd' });
        // drawWeights without await, then dispose
        const canvas = new OffscreenCanvas(1, 1);
        const drawn = model.drawWeights(0, canvas);
        model.dispose();
        const draw = await outcome(drawn, () => {
          const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
          const colours = new Set();
          for (let i = 0; i < px.length; i += 4) colours.add(`${px[i]},${px[i + 1]},${px[i + 2]},${px[i + 3]}`);
          // the 16x6 weight matrix as an image of at least 96 pixels, in more than one colour
          return canvas.width * canvas.height >= 96 ? colours.size : -1;
        });
        // a tensor read without await, then dispose
        const m2 = pg.sequential([pg.layers.dense({ units: 3, inputShape: [2] })], { seed: 1 });
        const t = m2.predict(pg.tensor([[1, 2], [3, 4]]));
        const want = Array.from(await t.data());
        const read = t.data();
        t.dispose();
        const data = await outcome(read, async () => Array.from(await read).every((v, i) => v === want[i]));
        // save, getWeights and toOnnx without await, then dispose
        const m3 = pg.sequential([pg.layers.dense({ units: 3, inputShape: [2] })], { seed: 1 });
        m3.compile({});
        const weights = m3.getWeights();
        const onnx = m3.toOnnx();
        m3.dispose();
        const w = await outcome(weights, async () => Object.keys(await weights).length === 2);
        const o = await outcome(onnx, async () => (await onnx).length > 0);
        return { draw, data, w, o };
      }, backend);
      process.stderr.write(`[${backend}] ${JSON.stringify(r)}\n`);
      for (const [name, v] of Object.entries(r)) {
        if (v.done) assert.ok(v.ok === true || v.ok > 1, `${name} completed but did nothing: ${JSON.stringify(v)}`);
        else assert.ok(v.pg && v.kind, `${name} rejected without a PixelgradError: ${JSON.stringify(v)}`);
      }
    });
  }
}
