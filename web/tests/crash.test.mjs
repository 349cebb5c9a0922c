// The wasm boundary (issue 38): a Rust panic traps the instance, and a trapped instance is never
// used again. `pg.__testPanic` (test-only) panics inside the module; the test checks that the
// panic surfaces as a PixelgradError of kind 'panic' with the Rust message, that objects made
// before it (model, device tensor, checkpoint) throw kind 'instanceLost' naming the panic,
// that host tensors and the runtime `rt` keep working, and that a new model trains to the same
// accuracy as before the crash, on a fresh instance. Also a panic inside an asynchronous Rust
// call (whose promise would otherwise never settle) and two crashes in a row.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

/** In the page: trains the digits MLP, panics, and tries everything afterwards. */
async function crashAndGoOn(pg, backend) {
  const rt = await pg.init({ backend });
  const d = pg.data.digits();
  const x = pg.tensor(d.train.x, [d.train.n, 64]);
  const y = pg.tensor(d.train.y, [d.train.n]);
  const xt = pg.tensor(d.test.x, [d.test.n, 64]);
  const yt = pg.tensor(d.test.y, [d.test.n]);
  const make = () => {
    const m = pg.sequential([pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 3 });
    m.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    return m;
  };
  const train = async (m) => {
    await m.fit(x, y, { epochs: 3, batchSize: 64, seed: 1 });
    return (await m.evaluate(xt, yt)).accuracy;
  };
  const err = async (f) => {
    try {
      await f();
      return null;
    } catch (e) {
      return { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message, panicMessage: e.panicMessage };
    }
  };
  const model = make();
  const before = await train(model);
  const ck = await model.checkpoint();
  const out = model.predict(xt);

  // a panic in a synchronous call
  let panic = null;
  try {
    pg.__testPanic('boom from crash.test');
  } catch (e) {
    panic = { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message, panicMessage: e.panicMessage };
  }
  // right after it, synchronously (no await in between): a new model on the same runtime
  let syncNew = null;
  if (backend !== 'webgpu') {
    try {
      syncNew = make().predict(xt).shape;
    } catch (e) {
      syncNew = { kind: e.kind, message: e.message };
    }
  } else {
    // WebGPU starts asynchronously: async calls wait for it, recover() resolves when done
    await rt.recover();
  }
  const old = {
    predict: await err(() => model.predict(xt)),
    fit: await err(() => model.fit(x, y)),
    data: await err(() => out.data()),
    weights: await err(() => ck.weights()),
    restore: await err(() => model.restore()),
  };
  // the runtime and host tensors are fine; a new model trains as well as the first one did
  const fresh = make();
  const after = await train(fresh);
  const sameStart = Array.from(await make().predict(xt).data()).slice(0, 5);
  const firstStart = Array.from(await pg.sequential([pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 3 }).predict(xt).data()).slice(0, 5);

  // a panic inside an asynchronous Rust call: the promise rejects instead of hanging
  const asyncPanic = await err(() => pg.__testPanic('async boom from crash.test', { async: true }));
  const afterAsync = await err(() => fresh.predict(xt));
  // The glue copy for the next fresh instance is imported after the first crash: on a loaded
  // machine it may not be there yet, and synchronous calls would throw until it is (the next
  // test covers that path). recover() waits for it (and for WebGPU's asynchronous start).
  await rt.recover();
  const third = make();
  const accuracy3 = await train(third);
  return {
    backend: rt.backend,
    before,
    panic,
    syncNew,
    old,
    after,
    sameStart: sameStart.every((v, i) => v === firstStart[i]),
    asyncPanic,
    afterAsync,
    accuracy3,
    memory: rt.memory().bytesInUse >= 0,
    recoveries: (rt.report.recoveries || []).map((r) => ({ lost: r.lost, backend: r.backend, crash: r.crash })),
  };
}

for (const backend of ['cpu', 'webgl', 'webgpu']) {
  test(`${backend}: a panic discards the wasm instance; old objects throw instanceLost; a new model trains`, async () => {
    const r = await inPage(crashAndGoOn, backend);
    process.stderr.write(`[${backend}] ${JSON.stringify({ ...r, old: Object.keys(r.old) })}\n`);
    assert.equal(r.backend, backend);
    assert.ok(r.before >= 0.9, `accuracy before ${r.before}`);
    // the panic: typed, with the Rust message
    assert.ok(r.panic, 'the panic did not throw');
    assert.equal(r.panic.pg, true);
    assert.equal(r.panic.kind, 'panic');
    assert.equal(r.panic.op, '__testPanic');
    assert.match(r.panic.panicMessage, /^boom from crash\.test \(at crates\/pixelgrad-web\/src\/wasm\/crash\.rs:\d+:\d+\)$/);
    assert.match(r.panic.message, /^__testPanic: the wasm module crashed \(Rust panic: boom from crash\.test \(at /);
    if (backend !== 'webgpu') assert.deepEqual(r.syncNew, [359, 10], `a new model right after the panic: ${JSON.stringify(r.syncNew)}`);
    // every old object: instanceLost, naming the panic
    for (const [what, e] of Object.entries(r.old)) {
      assert.ok(e, `${what}: no error`);
      assert.equal(e.pg, true, what);
      assert.equal(e.kind, 'instanceLost', `${what}: ${e.kind} ${e.message}`);
      assert.match(e.message, /discarded after a crash .*boom from crash\.test/, what);
    }
    // the fresh instance trains as well, from the same seeded start
    assert.ok(r.after >= 0.9, `accuracy after ${r.after}`);
    assert.ok(Math.abs(r.after - r.before) < 1e-6, `same accuracy before (${r.before}) and after (${r.after}) the crash`);
    assert.equal(r.sameStart, true);
    // the asynchronous panic rejected (instead of never settling) and was recovered as well
    assert.equal(r.asyncPanic?.kind, 'panic', JSON.stringify(r.asyncPanic));
    assert.match(r.asyncPanic.panicMessage, /^async boom from crash\.test \(at /);
    assert.equal(r.afterAsync?.kind, 'instanceLost');
    assert.ok(Math.abs(r.accuracy3 - r.before) < 1e-6, `accuracy after two crashes ${r.accuracy3}`);
    assert.equal(r.memory, true);
    // both crashes restarted the same backend, recorded in the report
    assert.equal(r.recoveries.length, 2);
    for (const rec of r.recoveries) {
      assert.equal(rec.lost, backend);
      assert.equal(rec.backend, backend);
    }
    assert.match(r.recoveries[0].crash, /boom from crash\.test/);
    assert.match(r.recoveries[1].crash, /async boom from crash\.test/);
  });
}

/** In the page: a panic whose fresh instance cannot be made synchronously (a module over 8 MiB). */
async function crashWithAsyncReplacement(pg) {
  const rt = await pg.init({ backend: 'cpu' });
  const d = pg.data.digits();
  const x = pg.tensor(d.train.x, [d.train.n, 64]);
  const y = pg.tensor(d.train.y, [d.train.n]);
  const make = () => {
    const m = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 5 });
    m.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
    return m;
  };
  const train = async (m) => {
    await m.fit(x, y, { epochs: 2, batchSize: 64, seed: 1 });
    return (await m.evaluate(x, y)).loss;
  };
  const before = await train(make());
  let panic = null;
  try {
    pg.__testPanic('too big to instantiate synchronously', { refuseSyncInstance: true });
  } catch (e) {
    panic = e.kind;
  }
  // synchronously right after: the fresh instance is still being made
  let syncNew = null;
  try {
    syncNew = make().predict(x).shape;
  } catch (e) {
    syncNew = { kind: e.kind, message: e.message };
  }
  // recover() (like every async call) waits for it
  await rt.recover();
  const after = await train(make());
  return { panic, syncNew, before, after, recoveries: (rt.report.recoveries || []).map((r) => ({ lost: r.lost, backend: r.backend })) };
}

test('a fresh instance too large to make synchronously is made asynchronously; sync calls meanwhile say to await recover()', async () => {
  const r = await inPage(crashWithAsyncReplacement);
  process.stderr.write(`[async replacement] ${JSON.stringify(r)}\n`);
  assert.equal(r.panic, 'panic');
  assert.equal(r.syncNew?.kind, 'instanceLost', JSON.stringify(r.syncNew));
  assert.match(r.syncNew.message, /a fresh one is being made; await rt\.recover\(\)/);
  assert.ok(Math.abs(r.after - r.before) < 1e-6, `same loss before (${r.before}) and after (${r.after}) the crash`);
  assert.deepEqual(r.recoveries, [{ lost: 'cpu', backend: 'cpu' }]);
});
