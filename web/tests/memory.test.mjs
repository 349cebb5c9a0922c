// Device memory in the page: `rt.memory()` reports live and pooled bytes and the pool budget,
// `rt.setPoolBudget()` bounds the pool, `rt.trim()` empties it, on webgpu and webgl
// (SwiftShader). A small CNN predicts batches of 24 different sizes (shape churn), so the pools
// fill with buffers / textures of many sizes first.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

for (const backend of ['webgpu', 'webgl']) {
  test(`${backend}: memory() reports live and pooled bytes, setPoolBudget bounds the pool, trim() empties it`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend, allowSoftware: true });
      const model = pg.sequential([
        pg.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same', activation: 'relu', inputShape: [12, 12, 3] }),
        pg.layers.maxPooling2d(),
        pg.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same' }),
      ]);
      const input = (n) => pg.tensor(new Float32Array(n * 12 * 12 * 3).map((_, i) => (i % 7) / 7), [n, 12, 12, 3]);
      const predict = async (n) => {
        const x = input(n);
        const y = model.predict(x);
        const v = await y.data();
        x.dispose();
        y.dispose();
        return v.length;
      };
      const start = rt.memory();
      for (let n = 1; n <= 24; n++) await predict(n);
      const churned = rt.memory();
      rt.setPoolBudget(64 * 1024);
      const bounded = rt.memory();
      // More sizes under the small budget: the pool stays within it.
      let worst = 0;
      for (let n = 25; n <= 32; n++) {
        await predict(n);
        worst = Math.max(worst, rt.memory().pooledBytes);
      }
      const trimmed = await rt.trim();
      const after = rt.memory();
      const len = await predict(3);
      model.dispose();
      return { backend: rt.backend, start, churned, bounded, worst, trimmed, after, len };
    }, backend);
    assert.equal(r.backend, backend);
    for (const k of ['bytesInUse', 'liveBytes', 'pooledBytes', 'poolBudget', 'allocations']) {
      assert.equal(typeof r.churned[k], 'number', k);
    }
    assert.equal(r.start.poolBudget, 256 * 1024 * 1024, 'default budget');
    for (const m of [r.churned, r.bounded, r.trimmed, r.after]) {
      assert.equal(m.bytesInUse, m.liveBytes + m.pooledBytes, JSON.stringify(m));
    }
    // The churn left freed buffers / textures in the pool for reuse.
    assert.ok(r.churned.pooledBytes > 64 * 1024, `pooled after the churn: ${r.churned.pooledBytes}`);
    assert.equal(r.bounded.poolBudget, 64 * 1024);
    assert.ok(r.bounded.pooledBytes <= 64 * 1024, `pooled after setPoolBudget: ${r.bounded.pooledBytes}`);
    assert.ok(r.worst <= 64 * 1024, `pooled while churning under the budget: ${r.worst}`);
    // trim frees the pool and only the pool: the model's weights stay.
    assert.equal(r.trimmed.pooledBytes, 0);
    assert.equal(r.after.pooledBytes, 0);
    assert.equal(r.trimmed.liveBytes, r.bounded.liveBytes);
    assert.ok(r.trimmed.liveBytes > 0, 'the weights are live');
    assert.equal(r.len, 3 * 6 * 6 * 8, 'the model still predicts after trim');
  });
}

test('setPoolBudget refuses what is not a byte count with a typed error', async () => {
  const r = await inPage(async (pg) => {
    const rt = await pg.init({ backend: 'webgl', allowSoftware: true });
    const out = [];
    for (const bad of [-1, NaN, Infinity]) {
      try {
        rt.setPoolBudget(bad);
        out.push(null);
      } catch (e) {
        out.push({ isPg: e instanceof pg.PixelgradError, kind: e.kind, message: e.message });
      }
    }
    rt.setPoolBudget(0);
    const zero = rt.memory();
    return { out, zero };
  });
  for (const e of r.out) {
    assert.ok(e && e.isPg, JSON.stringify(e));
    assert.equal(e.kind, 'invalid');
    assert.match(e.message, /setPoolBudget: .*number of bytes >= 0/);
  }
  assert.equal(r.zero.poolBudget, 0);
  assert.equal(r.zero.pooledBytes, 0);
});
