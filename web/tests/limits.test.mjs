// Bounded and cancellable work in the browser (issue 38): `fit({ signal })` and
// `onnx.run(feeds, { signal, maxWork })` take an AbortSignal and a work budget, `init({ limits })`
// caps every primitive, and a broadcast or matrix-product bomb asked for from JS or by a
// 100-byte ONNX model is a PixelgradError of kind 'budget' before anything is allocated (even
// where the size does not fit a 32-bit count): the tab, the runtime and the model stay usable.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

// --- a minimal ONNX writer (protobuf by hand), for one-node models --------------------------

function varint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const int = (field, v) => [...key(field, 0), ...varint(v)];
const bytes = (field, b) => [...key(field, 2), ...varint(b.length), ...b];
const str = (field, s) => bytes(field, [...Buffer.from(s, 'utf8')]);

/** `ValueInfoProto` of a float tensor `name` with fixed `shape` (no shape: unknown). */
function valueInfo(name, shape) {
  const dims = shape ? bytes(2, shape.flatMap((d) => bytes(1, int(1, d)))) : [];
  return [...str(1, name), ...bytes(2, bytes(1, [...int(1, 1), ...dims]))];
}

/** An ONNX model (opset 13) with one node `op` from `inputs` (name → shape) to output `Y`. */
function oneNodeModel(op, inputs) {
  const node = [...Object.keys(inputs).flatMap((n) => str(1, n)), ...str(2, 'Y'), ...str(3, 'node'), ...str(4, op)];
  const graph = [
    ...bytes(1, node),
    ...str(2, 'bomb'),
    ...Object.entries(inputs).flatMap(([n, s]) => bytes(11, valueInfo(n, s))),
    ...bytes(12, valueInfo('Y', null)),
  ];
  return [...int(1, 8), ...bytes(7, graph), ...bytes(8, [...str(1, ''), ...int(2, 13)])];
}

// --- the tests ------------------------------------------------------------------------------

test('fit: an AbortSignal stops training between steps with kind cancelled; the model stays usable', async () => {
  const r = await inPage(async (pg) => {
    // `f()`'s error as data (null if it did not throw or reject)
    const err = async (f) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message, cause: e.cause ? String(e.cause.name || e.cause) : null };
      }
    };
    await pg.init({ backend: 'cpu' });
    const d = pg.data.digits();
    const x = pg.tensor(d.train.x, [d.train.n, 64]);
    const y = pg.tensor(d.train.y, [d.train.n]);
    const model = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })], { seed: 2 });
    model.compile({ optimizer: pg.optimizers.adam(1e-2) });
    // aborted from a callback at step 5 of 900
    const ac = new AbortController();
    const seen = [];
    const aborted = await err(() => model.fit(x, y, {
      epochs: 10, batchSize: 16, readEvery: 1, signal: ac.signal,
      onBatchEnd: (step) => {
        seen.push(step);
        if (step === 5) ac.abort();
      },
    }));
    const w5 = Array.from(await (await model.getWeights())['0.weight'].data()).slice(0, 4);
    // the model goes on: predict, evaluate and a second fit
    const p = (await model.predict(x).data()).length;
    const h = await model.fit(x, y, { epochs: 2, batchSize: 64 });
    const ev = await model.evaluate(pg.tensor(d.test.x, [d.test.n, 64]), pg.tensor(d.test.y, [d.test.n]));
    // a signal aborted before fit: rejected at once, no step taken, weights untouched
    const wBefore = Array.from(await (await model.getWeights())['0.weight'].data());
    let steps = 0;
    const pre = await err(() => model.fit(x, y, { signal: AbortSignal.abort(new Error('user left')), onBatchEnd: () => steps++ }));
    const wAfter = Array.from(await (await model.getWeights())['0.weight'].data());
    const bad = await err(() => model.fit(x, y, { signal: 'stop' }));
    return { aborted, seen, w5: w5.length, p, n: d.train.n, epochs: h.history.loss.length, accuracy: ev.accuracy, pre, steps, unchanged: wBefore.every((v, i) => v === wAfter[i]), bad };
  });
  assert.equal(r.aborted?.kind, 'cancelled', JSON.stringify(r.aborted));
  assert.equal(r.aborted.pg, true);
  assert.equal(r.aborted.op, 'fit');
  assert.match(r.aborted.message, /^fit: cancelled by its AbortSignal after 5 of 900 steps/);
  assert.equal(r.aborted.cause, 'AbortError');
  assert.deepEqual(r.seen, [1, 2, 3, 4, 5], 'no step after the abort');
  assert.equal(r.p, r.n * 10);
  assert.equal(r.epochs, 2);
  assert.ok(r.accuracy > 0.85, `accuracy after an aborted fit ${r.accuracy}`);
  assert.equal(r.pre?.kind, 'cancelled');
  assert.match(r.pre.message, /before the first step \(user left\)/);
  assert.equal(r.steps, 0);
  assert.equal(r.unchanged, true);
  assert.equal(r.bad?.kind, 'invalid');
});

test('onnx.run: maxWork and an aborted signal; a broadcast bomb and a matmul bomb are kind budget', async () => {
  const bomb = { bytes: oneNodeModel('Add', { A: [32768, 1], B: [1, 32768] }), bytes32: oneNodeModel('Add', { A: [65536, 1], B: [1, 65536] }) };
  const r = await inPage(async (pg, bomb) => {
    // `f()`'s error as data (null if it did not throw or reject)
    const err = async (f) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message, cause: e.cause ? String(e.cause.name || e.cause) : null };
      }
    };
    await pg.init({ backend: 'cpu' });
    const m = pg.sequential([pg.layers.dense({ units: 8, inputShape: [4], activation: 'relu' }), pg.layers.dense({ units: 3 })], { seed: 1 });
    const onnx = await pg.loadOnnx(await m.toOnnx());
    const x = pg.tensor(new Float32Array(8).map((_, i) => i / 8), [2, 4]);
    const want = Array.from(await m.predict(x).data());
    const feeds = { [onnx.inputs[0].name]: x };
    const out = async (res) => Array.from(await res[onnx.outputs[0].name].data());
    const plain = await out(await onnx.run(feeds));
    const tiny = await err(() => onnx.run(feeds, { maxWork: 10 }));
    const enough = await out(await onnx.run(feeds, { maxWork: 1e6 }));
    const badWork = await err(() => onnx.run(feeds, { maxWork: -1 }));
    const pre = await err(() => onnx.run(feeds, { signal: AbortSignal.abort() }));
    const after = await out(await onnx.run(feeds, { signal: new AbortController().signal }));
    // the bombs: 2^30 elements (4 GiB of f32) asked for by JS and by a 100-byte model; and
    // 2^32, which a 32-bit wasm size cannot even count (weighed in 128 bits, never wrapped)
    const col = (n) => pg.tensor(new Float32Array(n), [n, 1]);
    const row = (n) => pg.tensor(new Float32Array(n), [1, n]);
    const matmul = await err(() => pg.matmul(col(32768), row(32768)));
    const matmul32 = await err(() => pg.matmul(col(65536), row(65536)));
    const add = await pg.loadOnnx(new Uint8Array(bomb.bytes));
    const add32 = await pg.loadOnnx(new Uint8Array(bomb.bytes32));
    const broadcast = await err(() => add.run({ A: col(32768), B: row(32768) }));
    const broadcast32 = await err(() => add32.run({ A: col(65536), B: row(65536) }));
    // the tab and the runtime are fine
    const still = await out(await onnx.run(feeds));
    return { want, plain, tiny, enough, badWork, pre, after, matmul, matmul32, broadcast, broadcast32, still, bombBytes: bomb.bytes.length };
  }, bomb);
  const close = (a, b) => a.length === b.length && a.every((v, i) => Math.abs(v - b[i]) <= 1e-5 * Math.max(1, Math.abs(b[i])));
  assert.ok(close(r.plain, r.want), `onnx ${r.plain} vs predict ${r.want}`);
  assert.equal(r.tiny?.kind, 'budget', JSON.stringify(r.tiny));
  assert.match(r.tiny.message, /over the limit of 10 \(raise it with the run's max_work .*maxWork/);
  assert.deepEqual(r.enough, r.plain);
  assert.equal(r.badWork?.kind, 'invalid');
  assert.equal(r.pre?.kind, 'cancelled');
  assert.equal(r.pre.op, 'onnx.run');
  assert.deepEqual(r.after, r.plain);
  assert.equal(r.matmul?.kind, 'budget', JSON.stringify(r.matmul));
  assert.match(r.matmul.message, /needs 1073741824 elements in one result, over the limit of 268435456 \(raise it with .*maxElements/);
  assert.equal(r.broadcast?.kind, 'budget', JSON.stringify(r.broadcast));
  assert.match(r.broadcast.message, /needs 1073741824 elements in one result/);
  for (const e of [r.matmul32, r.broadcast32]) {
    assert.equal(e?.kind, 'budget', JSON.stringify(e));
    assert.match(e.message, /needs 4294967296 elements in one result/);
  }
  assert.ok(r.bombBytes < 120, `the bomb model is ${r.bombBytes} bytes`);
  assert.deepEqual(r.still, r.plain);
});

test('init({ limits }) caps every primitive; bad limits are refused', async () => {
  const r = await inPage(async (pg) => {
    // `f()`'s error as data (null if it did not throw or reject)
    const err = async (f) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message, cause: e.cause ? String(e.cause.name || e.cause) : null };
      }
    };
    const rt = await pg.init({ backend: 'cpu', limits: { maxElements: 1000 } });
    const limits = rt.limits;
    const m = pg.sequential([pg.layers.dense({ units: 10, inputShape: [4] })], { seed: 1 });
    const small = (await m.predict(pg.tensor(new Float32Array(40), [10, 4])).data()).length;
    const big = await err(() => m.predict(pg.tensor(new Float32Array(4 * 200), [200, 4])));
    const badValue = await err(() => pg.init({ backend: 'cpu', limits: { maxElements: -5 } }));
    const badKey = await err(() => pg.init({ backend: 'cpu', limits: { maxBytes: 5 } }));
    const rt2 = await pg.init({ backend: 'cpu', limits: { maxOpWork: 100 } });
    const m2 = pg.sequential([pg.layers.dense({ units: 10, inputShape: [4] })], { seed: 1 });
    const work = await err(() => m2.predict(pg.tensor(new Float32Array(40), [10, 4])));
    return { limits, small, big, badValue, badKey, limits2: rt2.limits, work };
  });
  assert.equal(r.limits.maxElements, 1000);
  assert.equal(r.limits.maxOpWork, 2 ** 36);
  assert.equal(r.small, 100);
  assert.equal(r.big?.kind, 'budget', JSON.stringify(r.big));
  assert.match(r.big.message, /2000 elements in one result, over the limit of 1000 \(raise it with .*maxElements/);
  assert.equal(r.badValue?.kind, 'invalid');
  assert.match(r.badValue.message, /maxElements must be a whole number/);
  assert.equal(r.badKey?.kind, 'invalid');
  assert.deepEqual(r.limits2, { maxElements: 2 ** 28, maxOpWork: 100 });
  assert.equal(r.work?.kind, 'budget');
  assert.match(r.work.message, /maxOpWork/);
});
