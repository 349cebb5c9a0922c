// `pg.flower` in headless Chromium: partitions match the native ones' contract, and bad input
// is a JS Error with a clear message while the model stays as it was — an unreachable
// SuperLink (through the page server, which answers 502), a server that is no Fleet API, an
// uncompiled model, data of the wrong shape. A whole federation of tabs runs in
// scripts/flower-tests.sh (`cargo xtask federated`).
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, newPage } from './harness.mjs';
import { startPageServer } from '../federated/server.mjs';

let pageServer;
let browser;
let page;

before(async () => {
  // A page server whose SuperLink is a port nothing listens on.
  pageServer = await startPageServer({ superlink: 'http://127.0.0.1:9' });
  browser = await launchBrowser();
  page = await newPage(browser);
  await page.goto(`${pageServer.url}/tests/pages/api.html`);
  await page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
});

after(async () => {
  await browser?.close();
  await pageServer?.close();
});

function inPage(fn, arg) {
  return page.evaluate(([src, a]) => {
    // eslint-disable-next-line no-new-func
    const f = new Function('pg', 'arg', `return (${src})(pg, arg);`);
    return f(window.pg, a);
  }, [fn.toString(), arg]);
}

test('partition: disjoint non-IID shards covering the data, seeded', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const d = pg.data.digits();
    const parts = [0, 1, 2].map((index) => pg.flower.partition(d, { index, count: 3, alpha: 0.3, seed: 42 }));
    const again = pg.flower.partition(d, { index: 1, count: 3, alpha: 0.3, seed: 42 });
    let bad = null;
    try {
      pg.flower.partition(d, { index: 3, count: 3 });
    } catch (e) {
      bad = e.message;
    }
    return {
      train: parts.map((p) => p.train.n),
      test: parts.map((p) => p.test.n),
      total: d.train.n,
      totalTest: d.test.n,
      same: Array.from(again.train.y).join() === Array.from(parts[1].train.y).join(),
      top: parts.map((p) => {
        const c = new Array(10).fill(0);
        p.train.y.forEach((v) => c[v]++);
        return Math.max(...c) / p.train.n;
      }),
      bad,
    };
  });
  assert.equal(r.train.reduce((a, b) => a + b), r.total);
  assert.equal(r.test.reduce((a, b) => a + b), r.totalTest);
  assert.ok(r.same, 'the same seed gives the same shard');
  assert.ok(Math.max(...r.top) > 0.2, `alpha 0.3 skews the labels: ${r.top}`);
  assert.match(r.bad, /index must be in 0\.\.count-1/);
});

test('join: clear errors, the model unchanged', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const d = pg.flower.partition(pg.data.digits(), { index: 0, count: 2, seed: 42 });
    const model = pg.sequential([pg.layers.dense({ units: 8, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })]);
    const weights = async () => Array.from(await model.predict(pg.tensor(d.test.x.subarray(0, 64), [1, 64])).data());
    const errors = {};
    const tryJoin = async (name, opts) => {
      try {
        await pg.flower.join({ server: location.origin, model, data: d, ...opts });
        errors[name] = 'resolved';
      } catch (e) {
        errors[name] = e.message;
      }
    };
    await tryJoin('uncompiled', {});
    model.compile({ optimizer: pg.optimizers.adam(1e-3), loss: 'softmaxCrossEntropy' });
    const before = await weights();
    await tryJoin('unreachable', {});
    await tryJoin('notFleet', { server: `${location.origin}/not-a-superlink` });
    await tryJoin('badServer', { server: 'localhost:8080' });
    await tryJoin('badData', { data: { train: { x: new Float32Array(10), y: new Int32Array(2), n: 2 }, test: d.test } });
    const after = await weights();
    return { errors, unchanged: before.join() === after.join() };
  });
  const e = r.errors;
  assert.match(e.uncompiled, /not compiled/);
  assert.match(e.unreachable, /flower\.join: SuperLink answered 502 .*unreachable/);
  assert.match(e.notFleet, /no Fleet route \/v1\/fleet\/register-node/);
  assert.match(e.badServer, /server must be an http\(s\) origin/);
  assert.match(e.badData, /the model takes samples of shape \[64\]/);
  assert.ok(r.unchanged, 'failed joins leave the model as it was');
});
