// Context and device loss in the browser (issue 17): `fit` keeps host checkpoints and, when the
// WebGL2 context or the WebGPU device is lost (simulated with `rt.simulateContextLoss()`:
// WEBGL_lose_context / device.destroy()), restarts the backend, restores the last checkpoint
// and goes on. Also: tensors of a lost device throw a `deviceLost` PixelgradError, and
// `model.restore()` brings a model back from its last checkpoint.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage, ctx } = apiPage();

/**
 * In the page: the digits MLP trained for 600 steps (1200 samples, batches of 20, 10 epochs) on
 * `backend`, losing the device after the read at step `loseAt` (0: never). Returns the test
 * accuracy, the device-loss reports, and whether the weights right after recovery equal the
 * checkpoint's.
 */
async function run600(pg, { backend, loseAt }) {
  const rt = await pg.init({ backend });
  const d = pg.data.digits();
  const n = 1200;
  const x = pg.tensor(d.train.x.subarray(0, n * 64), [n, 64]);
  const y = pg.tensor(d.train.y.subarray(0, n), [n]);
  const model = pg.sequential(
    [pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }), pg.layers.dropout({ rate: 0.1 }), pg.layers.dense({ units: 10 })],
    { seed: 5 },
  );
  model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
  const losses = [];
  const checks = [];
  let steps = 0;
  const h = await model.fit(x, y, {
    epochs: 10, batchSize: 20, shuffle: true, seed: 3, readEvery: 10,
    onBatchEnd: (step) => {
      steps = Math.max(steps, step);
      if (step === loseAt && losses.length === 0) rt.simulateContextLoss();
    },
    callbacks: {
      onDeviceLost: async (info) => {
        // right after the restore, before any step is redone: the weights are the checkpoint's
        const ck = model.lastCheckpoint;
        const want = ck.weights();
        const got = await model.getWeights();
        let equal = Object.keys(want).length === Object.keys(got).length;
        for (const [k, v] of Object.entries(want)) {
          const g = await got[k].data();
          equal = equal && g.length === v.length && g.every((e, i) => e === v[i]);
        }
        checks.push({ equal, ckStep: ck.step, names: Object.keys(want).length });
        losses.push({ ...info, tried: info.tried.map((t) => [t.backend, t.ok]) });
      },
    },
  });
  const xt = pg.tensor(d.test.x, [d.test.n, 64]);
  const yt = pg.tensor(d.test.y, [d.test.n]);
  const ev = await model.evaluate(xt, yt);
  const w = await model.getWeights();
  const w0 = Array.from(await w['0.weight'].data()).slice(0, 8);
  return { backend: rt.backend, lost: rt.lost, accuracy: ev.accuracy, epochs: h.history.loss.length, steps, losses, checks, checkpoints: h.checkpoints, w0, recoveries: (rt.report.recoveries || []).length };
}

for (const backend of ['webgl', 'webgpu']) {
  test(`${backend}: a device loss at step 300 of 600 is recovered from the last checkpoint`, async () => {
    const clean = await inPage(run600, { backend, loseAt: 0 });
    const lost = await inPage(run600, { backend, loseAt: 300 });
    process.stderr.write(`[${backend}] clean ${JSON.stringify(clean)}\n[${backend}] lost ${JSON.stringify(lost)}\n`);
    assert.equal(clean.losses.length, 0);
    assert.equal(clean.epochs, 10);
    assert.equal(lost.backend, backend, 'the same backend came back');
    assert.equal(lost.lost, null, 'the runtime works again');
    assert.equal(lost.epochs, 10, 'fit completed every epoch');
    assert.equal(lost.steps, 600);
    assert.equal(lost.losses.length, 1, 'onDeviceLost fired once');
    const info = lost.losses[0];
    assert.equal(info.lostBackend, backend);
    assert.equal(info.backend, backend);
    assert.ok(info.step >= 300 && info.redo >= 0 && info.redo <= lost.checkpoints.every, JSON.stringify(info));
    assert.equal(info.checkpointStep, info.step - info.redo);
    assert.deepEqual(lost.checks.map((c) => c.equal), [true], 'weights after recovery equal the checkpoint');
    assert.equal(lost.checks[0].ckStep, info.checkpointStep);
    assert.ok(clean.accuracy > 0.85, `accuracy ${clean.accuracy}`);
    assert.ok(Math.abs(lost.accuracy - clean.accuracy) <= 0.01, `accuracy ${lost.accuracy} vs uninterrupted ${clean.accuracy}`);
    assert.ok(lost.checkpoints.every >= 20 && lost.checkpoints.taken >= 600 / lost.checkpoints.every, JSON.stringify(lost.checkpoints));
    assert.equal(lost.recoveries, 1);
    // the redone steps replay the same batches, dropout masks and optimizer state
    assert.deepEqual(lost.w0, clean.w0, 'final weights equal the uninterrupted run');
  });

  test(`${backend}: outside fit, tensors of a lost device throw deviceLost and model.restore() brings the model back`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend });
      const d = pg.data.digits();
      const x = pg.tensor(d.train.x.subarray(0, 200 * 64), [200, 64]);
      const y = pg.tensor(d.train.y.subarray(0, 200), [200]);
      const model = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })]);
      model.compile({ optimizer: pg.optimizers.sgd(0.1), loss: 'softmaxCrossEntropy' });
      await model.fit(x, y, { epochs: 2, batchSize: 50, checkpointEvery: 4 });
      const xt = pg.tensor(d.test.x.subarray(0, 10 * 64), [10, 64]);
      const before = Array.from(await model.predict(xt).data());
      const p = model.predict(xt);
      const ckStep = model.lastCheckpoint.step;
      rt.simulateContextLoss();
      const lostNow = rt.lost;
      const errs = [];
      const grab = async (f) => {
        try {
          await f();
          errs.push(null);
        } catch (e) {
          errs.push({ pg: e instanceof pg.PixelgradError, error: e instanceof Error, kind: e.kind, op: e.op, msg: e.message });
        }
      };
      await grab(() => p.data());
      await grab(() => model.predict(xt));
      await grab(() => rt.memory());
      const restored = await model.restore();
      const after = Array.from(await model.predict(xt).data());
      // an old tensor stays refused after the recovery
      await grab(() => p.data());
      const mem = rt.memory();
      return { lostNow, errs, ckStep, restored, same: after.length === before.length && after.every((v, i) => Math.abs(v - before[i]) <= 1e-6 * Math.max(1, Math.abs(before[i]))), lostAfter: rt.lost, bytes: mem.bytesInUse, backend: rt.backend };
    }, backend);
    process.stderr.write(`[${backend}] ${JSON.stringify(r)}\n`);
    assert.ok(r.lostNow, 'rt.lost says the device is gone');
    for (const e of r.errs) {
      assert.ok(e && e.pg && e.error && e.kind === 'deviceLost', JSON.stringify(e));
      assert.match(e.msg, /lost/);
    }
    assert.match(r.errs[3].msg, /made on the .* device that was lost/);
    assert.equal(r.restored.step, 8, 'the last checkpoint is the end of fit');
    assert.equal(r.ckStep, 8);
    assert.equal(r.restored.backend, backend);
    assert.ok(r.same, 'predictions after restore equal those before the loss');
    assert.equal(r.lostAfter, null);
  });
}

for (const backend of ['cpu', 'webgl']) {
  test(`${backend}: stopOnNaN (default) stops at the first non-finite loss with the last good weights; off, training goes on`, async () => {
    const r = await inPage(async (pg, backend) => {
      await pg.init({ backend });
      const x = pg.tensor(Float32Array.from({ length: 64 * 4 }, (_, i) => 50 + (i % 7) * 10), [64, 4]);
      const y = pg.tensor(new Float32Array(64).fill(1e4), [64, 1]);
      const run = async (opts) => {
        const model = pg.sequential([pg.layers.dense({ units: 1, inputShape: [4] })], { seed: 2 });
        model.compile({ optimizer: pg.optimizers.sgd(0.5), loss: 'meanSquaredError' });
        const seen = [];
        const h = await model.fit(x, y, { epochs: 20, batchSize: 8, readEvery: 1, checkpointEvery: 3, ...opts, onBatchEnd: (s, l) => seen.push([s, l.loss]) });
        const w = await model.getWeights();
        const vals = [...(await w['0.weight'].data()), ...(await w['0.bias'].data())];
        const ck = model.lastCheckpoint;
        const ckVals = ck ? [...ck.weights()['0.weight'], ...ck.weights()['0.bias']] : null;
        return { stopped: h.stopped || null, epochs: h.history.loss.length, finite: vals.every(Number.isFinite), equalsCk: !!ckVals && vals.every((v, i) => v === ckVals[i]), ckStep: ck && ck.step, lastLog: seen[seen.length - 1], logs: seen.length };
      };
      return { on: await run({}), off: await run({ stopOnNaN: false }) };
    }, backend);
    process.stderr.write(`[${backend}] ${JSON.stringify(r)}\n`);
    const { on, off } = r;
    assert.ok(on.stopped, 'stopped');
    assert.ok(on.stopped.step > 0 && on.stopped.step < 160, JSON.stringify(on.stopped));
    assert.match(on.stopped.reason, new RegExp(`step ${on.stopped.step}`));
    assert.ok(on.finite, 'the weights kept are finite');
    assert.ok(on.equalsCk, 'they are the last good checkpoint');
    assert.equal(on.stopped.restoredStep, on.ckStep);
    assert.ok(on.ckStep < on.stopped.step && on.stopped.step - on.ckStep <= 3 + 1, JSON.stringify(on));
    assert.ok(on.lastLog[0] < on.stopped.step, 'no log reports the non-finite loss');
    assert.equal(off.stopped, null);
    assert.equal(off.epochs, 20);
    assert.equal(off.finite, false, 'without stopOnNaN the weights end non-finite');
  });
}

for (const backend of ['cpu', 'webgl']) {
  test(`${backend}: fit autosaves to IndexedDB and resumes after a page reload exactly where the save was`, async () => {
    const setup = async (pg, { backend, url, extra }) => {
      if (!pg.runtime() || pg.runtime().backend !== backend) await pg.init({ backend });
      const d = pg.data.digits();
      const n = 400;
      const x = pg.tensor(d.train.x.subarray(0, n * 64), [n, 64]);
      const y = pg.tensor(d.train.y.subarray(0, n), [n]);
      const model = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 9 });
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
      const o = { epochs: 4, batchSize: 20, seed: 4, ...(url ? { autosave: url, autosaveEvery: 30, resume: url } : {}), ...extra };
      return { model, x, y, o };
    };
    const url = `indexeddb://run-${backend}`;
    // first page: training is cut by a reload after step 70 (saves at steps 30 and 60)
    await inPage(async (pg, a) => {
      const { model, x, y, o } = await (0, eval)(`(${a.setup})`)(pg, { backend: a.backend, url: a.url, extra: {} });
      window.lastStep = 0;
      // from step 70 the callback never returns: the reload below cuts training there
      window.cut = model.fit(x, y, { ...o, onBatchEnd: (s) => { window.lastStep = s; return s >= 70 ? new Promise(() => {}) : undefined; } }).catch(() => {});
    }, { setup: setup.toString(), backend, url });
    await ctx.page.waitForFunction(() => window.lastStep >= 70, null, { timeout: 60000 });
    await ctx.page.reload();
    await ctx.page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
    const r = await inPage(async (pg, a) => {
      const make = (0, eval)(`(${a.setup})`);
      const res = await make(pg, { backend: a.backend, url: a.url, extra: {} });
      const firstSteps = [];
      const h = await res.model.fit(res.x, res.y, { ...res.o, onBatchEnd: (s) => firstSteps.push(s) });
      const clean = await make(pg, { backend: a.backend, url: null, extra: {} });
      const h2 = await clean.model.fit(clean.x, clean.y, clean.o);
      const w = await res.model.getWeights();
      const w2 = await clean.model.getWeights();
      let equal = true;
      for (const k of Object.keys(w2)) {
        const p = await w[k].data();
        const q = await w2[k].data();
        equal = equal && p.every((v, i) => v === q[i]);
      }
      // a completed run resumes as done; another schedule is an error naming it
      const again = await res.model.fit(res.x, res.y, res.o);
      let err = null;
      try {
        await res.model.fit(res.x, res.y, { ...res.o, batchSize: 10 });
      } catch (e) {
        err = { pg: e instanceof pg.PixelgradError, msg: e.message };
      }
      return { resumedFrom: h.resumedFrom, firstStep: firstSteps[0], loss: h.history.loss, cleanLoss: h2.history.loss, equal, againFrom: again.resumedFrom, err };
    }, { setup: setup.toString(), backend, url });
    process.stderr.write(`[${backend}] ${JSON.stringify(r)}\n`);
    assert.equal(r.resumedFrom, 60, 'resumed from the last autosave');
    assert.equal(r.firstStep, 70, 'the first read after resuming is step 70');
    // the same epoch losses (the device sums of a fresh device may be fused differently for
    // their first steps, so the last bits of a sum can differ; the weights below are exact)
    assert.equal(r.loss.length, r.cleanLoss.length);
    r.loss.forEach((l, i) => assert.ok(Math.abs(l - r.cleanLoss[i]) <= 1e-6 * r.cleanLoss[i], `epoch ${i}: ${l} vs ${r.cleanLoss[i]}`));
    assert.ok(r.equal, 'the same final weights as an uninterrupted run');
    assert.equal(r.againFrom, 80);
    assert.ok(r.err && r.err.pg && /batchSize 20, this fit 10/.test(r.err.msg), JSON.stringify(r.err));
  });
}

test('webgl: a context that is not given back is replaced by a new one, and fit goes on', async () => {
  const r = await inPage(async (pg) => {
    const rt = await pg.init({ backend: 'webgl' });
    const d = pg.data.digits();
    const x = pg.tensor(d.train.x.subarray(0, 200 * 64), [200, 64]);
    const y = pg.tensor(d.train.y.subarray(0, 200), [200]);
    const model = pg.sequential([pg.layers.dense({ units: 10, inputShape: [64] })]);
    model.compile({ optimizer: 'adam', loss: 'softmaxCrossEntropy' });
    const infos = [];
    const h = await model.fit(x, y, {
      epochs: 4, batchSize: 20, checkpointEvery: 10,
      onBatchEnd: (s) => { if (s === 20 && infos.length === 0) rt.simulateContextLoss({ restoreAfterMs: null }); },
      onDeviceLost: (info) => infos.push({ ...info, tried: info.tried.map((t) => [t.backend, t.ok, t.reason]) }),
    });
    return { infos, epochs: h.history.loss.length, backend: rt.backend, lost: rt.lost, predict: (await model.predict(x).data()).length };
  });
  assert.equal(r.infos.length, 1);
  assert.deepEqual(r.infos[0].tried.map((t) => [t[0], t[1]]), [['webgl', false], ['webgl', true]]);
  assert.match(r.infos[0].tried[0][2], /not restored within/);
  // lost in the callback of step 20, before that step's checkpoint: back to step 10
  assert.equal(r.infos[0].checkpointStep, 10);
  assert.equal(r.infos[0].redo, 10);
  assert.equal(r.epochs, 4);
  assert.equal(r.backend, 'webgl');
  assert.equal(r.lost, null);
  assert.equal(r.predict, 2000);
});

test('a backend that does not come back: fit goes on with the next one in the auto order (webgpu -> webgl -> webgl1 -> cpu)', async () => {
  const r = await inPage(async (pg) => {
    const rt = await pg.init({ backend: 'webgpu' });
    const capsStart = rt.report.caps;
    const d = pg.data.digits();
    const n = 600;
    const x = pg.tensor(d.train.x.subarray(0, n * 64), [n, 64]);
    const y = pg.tensor(d.train.y.subarray(0, n), [n]);
    const model = pg.sequential([pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 2 });
    model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    const infos = [];
    const h = await model.fit(x, y, {
      epochs: 8, batchSize: 20, checkpointEvery: 20,
      onBatchEnd: (s) => {
        if ((s === 50 && infos.length === 0) || (s === 110 && infos.length === 1) || (s === 170 && infos.length === 2)) rt.simulateContextLoss({ permanent: true });
      },
      onDeviceLost: async (info) => {
        const ck = model.lastCheckpoint.weights();
        const got = await (await model.getWeights())['0.weight'].data();
        infos.push({ lost: info.lostBackend, backend: info.backend, tried: info.tried.map((t) => [t.backend, t.ok]), step: info.step, ckStep: info.checkpointStep, equal: got.every((v, i) => v === ck['0.weight'][i]) });
      },
    });
    const ev = await model.evaluate(pg.tensor(d.test.x, [d.test.n, 64]), pg.tensor(d.test.y, [d.test.n]));
    return { infos, epochs: h.history.loss.length, backend: rt.backend, modelBackend: model.backend, accuracy: ev.accuracy, recoveries: rt.report.recoveries.map((q) => [q.lost, q.backend]), capsStart, capsEnd: rt.report.caps };
  });
  process.stderr.write(`[fallback] ${JSON.stringify(r)}\n`);
  assert.deepEqual(r.infos.map((i) => [i.lost, i.backend]), [['webgpu', 'webgl'], ['webgl', 'webgl1'], ['webgl1', 'cpu']]);
  assert.deepEqual(r.infos[0].tried, [['webgpu', false], ['webgl', true]]);
  assert.deepEqual(r.infos[1].tried, [['webgl', false], ['webgl1', true]]);
  assert.deepEqual(r.infos[2].tried, [['webgl1', false], ['cpu', true]]);
  assert.ok(r.infos.every((i) => i.equal && i.step - i.ckStep <= 20), JSON.stringify(r.infos));
  assert.equal(r.epochs, 8);
  assert.equal(r.backend, 'cpu');
  assert.equal(r.modelBackend, 'cpu');
  assert.deepEqual(r.recoveries, [['webgpu', 'webgl'], ['webgl', 'webgl1'], ['webgl1', 'cpu']]);
  // The report's capabilities are the backend's now, measured when it started: WebGPU's at
  // first (a shader-f16 answer, no single-op convolution), the CPU's after the last recovery.
  assert.equal(typeof r.capsStart.shaderF16, 'boolean', JSON.stringify(r.capsStart));
  assert.equal(r.capsStart.conv, false, JSON.stringify(r.capsStart));
  assert.equal(r.capsEnd.conv, true, JSON.stringify(r.capsEnd));
  assert.equal(r.capsEnd.int8Kernel, 'cpu-i32', JSON.stringify(r.capsEnd));
  assert.equal(r.capsEnd.shaderF16, null, JSON.stringify(r.capsEnd));
  assert.ok(r.accuracy > 0.85, `accuracy ${r.accuracy}`);
});

for (const backend of ['webgl', 'webgpu']) {
  test(`${backend} in a module Worker: a loss during fit is recovered as in a page`, async () => {
    const r = await ctx.page.evaluate((b) => new Promise((resolve) => {
      const w = new Worker('/tests/pages/recovery-worker.js', { type: 'module' });
      w.onmessage = (e) => {
        w.terminate();
        resolve(e.data);
      };
      w.onerror = (e) => resolve({ error: e.message || 'worker error' });
      w.postMessage({ backend: b });
    }), backend);
    process.stderr.write(`[worker ${backend}] ${JSON.stringify(r)}\n`);
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.backend, backend);
    assert.equal(r.lost, null);
    assert.equal(r.losses.length, 1);
    assert.deepEqual([r.losses[0].lostBackend, r.losses[0].backend], [backend, backend]);
    assert.ok(r.losses[0].step - r.losses[0].checkpointStep <= 20);
    assert.equal(r.epochs, 3);
    assert.ok(r.loss[2] < r.loss[0], `loss goes down: ${r.loss}`);
  });
}
