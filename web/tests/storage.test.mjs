// IndexedDB writes the browser refuses for lack of space (issue 38): `QuotaExceededError`,
// whether `put` throws it or the request reports it, is a PixelgradError of kind 'quota' from
// model.save, onnx.save and fit's autosave, and the next save works once there is room.
// Turning autosave on asks for persistent storage once per page (navigator.storage.persist,
// stubbed here to count the calls) and reports the answer.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

// Runs before the page's scripts: counts persist() calls and answers true.
function stubPersist() {
  window.persistCalls = 0;
  Object.defineProperty(navigator.storage, 'persist', {
    configurable: true,
    value: () => {
      window.persistCalls += 1;
      return Promise.resolve(true);
    },
  });
}

const { inPage } = apiPage({ initScript: stubPersist });

test('autosave asks for persistent storage once per page and reports the answer', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const m = pg.sequential([pg.layers.dense({ units: 4, inputShape: [3] })], { seed: 1 });
    m.compile({ optimizer: 'sgd' });
    const x = pg.tensor(new Float32Array(12), [4, 3]);
    const y = pg.tensor(new Int32Array([0, 1, 2, 3]), [4]);
    const plain = await m.fit(x, y, { epochs: 1, batchSize: 2 });
    const callsWithout = window.persistCalls;
    const h1 = await m.fit(x, y, { epochs: 2, batchSize: 2, autosave: 'indexeddb://persist-1' });
    const h2 = await m.fit(x, y, { epochs: 2, batchSize: 2, autosave: 'indexeddb://persist-2' });
    return { callsWithout, calls: window.persistCalls, plain: 'storagePersisted' in plain, p1: h1.storagePersisted, p2: h2.storagePersisted };
  });
  assert.equal(r.callsWithout, 0, 'no autosave, no request');
  assert.equal(r.plain, false);
  assert.equal(r.calls, 1, 'asked once');
  assert.equal(r.p1, true);
  assert.equal(r.p2, true);
});

test('QuotaExceededError from IndexedDB is kind quota, from every write; the next save works', async () => {
  const r = await inPage(async (pg) => {
    const err = async (f) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { pg: e instanceof pg.PixelgradError, kind: e.kind, message: e.message };
      }
    };
    await pg.init({ backend: 'cpu' });
    const m = pg.sequential([pg.layers.dense({ units: 4, inputShape: [3] })], { seed: 1 });
    m.compile({ optimizer: 'sgd' });
    const x = pg.tensor(new Float32Array(12), [4, 3]);
    const y = pg.tensor(new Int32Array([0, 1, 2, 3]), [4]);
    const onnx = await pg.loadOnnx(await m.toOnnx());
    const put = IDBObjectStore.prototype.put;
    const full = () => new DOMException('the quota has been exceeded (test)', 'QuotaExceededError');
    const out = {};
    // 1. put throws
    IDBObjectStore.prototype.put = function () {
      throw full();
    };
    out.saveThrows = await err(() => m.save('indexeddb://quota-model'));
    out.onnxThrows = await err(() => onnx.save('indexeddb://quota-onnx'));
    out.autosaveThrows = await err(() => m.fit(x, y, { epochs: 2, batchSize: 2, autosave: 'indexeddb://quota-fit', autosaveEvery: 1 }));
    // 2. the request fails with it (as Chromium reports a write over quota)
    IDBObjectStore.prototype.put = function () {
      this.transaction.abort();
      const req = {};
      setTimeout(() => req.onerror && req.onerror(), 0);
      Object.defineProperty(req, 'error', { get: full });
      return req;
    };
    out.saveRequest = await err(() => m.save('indexeddb://quota-model'));
    // 3. room again
    IDBObjectStore.prototype.put = put;
    const saved = await m.save('indexeddb://quota-model');
    const back = await pg.loadModel('indexeddb://quota-model');
    const want = await m.predict(x).data();
    const same = Array.from(await back.predict(x).data()).every((v, i) => v === want[i]);
    // a plain IndexedDB failure stays what it was (not quota)
    IDBObjectStore.prototype.put = function () {
      throw new DOMException('not allowed (test)', 'DataError');
    };
    out.other = await err(() => m.save('indexeddb://quota-model'));
    IDBObjectStore.prototype.put = put;
    return { out, bytes: saved.bytes, same };
  });
  for (const [what, e] of Object.entries(r.out)) {
    if (what === 'other') continue;
    assert.ok(e, `${what}: no error`);
    assert.equal(e.pg, true, what);
    assert.equal(e.kind, 'quota', `${what}: ${e.kind} ${e.message}`);
    assert.match(e.message, /storage quota is used up \(QuotaExceededError/, what);
  }
  assert.match(r.out.saveThrows.message, /model 'quota-model', \d+ bytes/);
  assert.match(r.out.autosaveThrows.message, /autosave 'quota-fit'/);
  assert.ok(r.bytes > 0);
  assert.equal(r.same, true);
  assert.ok(r.out.other && r.out.other.kind !== 'quota', JSON.stringify(r.out.other));
});
