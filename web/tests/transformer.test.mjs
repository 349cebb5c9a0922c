// The transformer layers in the npm package (issue 41, item 1): a tiny decoder (embedding +
// positionEmbedding + causal transformerBlock + dense) described with `pg.layers`, trained with
// `fit` on class indices at every position (the next token) to reverse short digit sequences,
// on webgpu, webgl and cpu with the same seed; its save/load round trip predicts the same
// values, and its ONNX export, loaded back with `pg.loadOnnx`, gives its outputs; bad layer
// options are PixelgradErrors of kind 'invalid' naming the option.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();

for (const backend of ['cpu', 'webgl', 'webgpu']) {
  test(`${backend}: a tiny decoder learns to reverse digits; save/load predicts the same`, async () => {
    const r = await inPage(async (pg, backend) => {
      const rt = await pg.init({ backend });
      const [DIGITS, HALF] = [8, 4];
      const LEN = 2 * HALF;
      // x0 x1 x2 x3 SEP x3 x2 x1, the next token at every position (the first ones are random)
      const batch = (n, seed) => {
        let s = seed;
        const rand = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
        const ids = new Float32Array(n * LEN);
        const next = new Float32Array(n * LEN);
        for (let i = 0; i < n; i++) {
          const d = Array.from({ length: HALF }, () => Math.floor(rand() * DIGITS) % DIGITS);
          const rev = [...d].reverse();
          const seq = [...d, DIGITS, ...rev.slice(0, HALF - 1)];
          ids.set(seq, i * LEN);
          next.set([...seq.slice(1), rev[HALF - 1]], i * LEN);
        }
        return { ids, next };
      };
      const model = pg.sequential({
        seed: 7,
        layers: [
          pg.layers.embedding({ inputDim: DIGITS + 1, outputDim: 32, inputShape: [LEN] }),
          pg.layers.positionEmbedding({ sequenceLength: LEN }),
          pg.layers.transformerBlock({ numHeads: 4, intermediateDim: 64, useCausalMask: true }),
          pg.layers.layerNormalization({ epsilon: 1e-5 }),
          pg.layers.dense({ units: DIGITS + 1 }),
        ],
      });
      model.compile({ optimizer: pg.optimizers.adam(3e-3), loss: 'softmaxCrossEntropy' });
      const train = batch(1024, 11);
      const h = await model.fit(pg.tensor(train.ids, [1024, LEN]), pg.tensor(train.next, [1024, LEN]), {
        epochs: 4, batchSize: 32, seed: 3,
      });
      const test = batch(128, 99);
      const x = pg.tensor(test.ids, [128, LEN]);
      const y = model.predict(x);
      const out = await y.data();
      // the answers: positions HALF-1 .. LEN-1 predict the digits reversed
      let right = 0;
      for (let i = 0; i < 128; i++) {
        for (let p = HALF - 1; p < LEN; p++) {
          const row = out.subarray((i * LEN + p) * (DIGITS + 1), (i * LEN + p + 1) * (DIGITS + 1));
          let best = 0;
          for (let c = 1; c < row.length; c++) if (row[c] > row[best]) best = c;
          if (best === test.next[i * LEN + p]) right++;
        }
      }
      const ev = await model.evaluate(x, pg.tensor(test.next, [128, LEN]));
      await model.save('indexeddb://transformer-decoder');
      const back = await pg.loadModel('indexeddb://transformer-decoder');
      const again = await back.predict(x).data();
      let diff = 0;
      for (let i = 0; i < out.length; i++) diff = Math.max(diff, Math.abs(out[i] - again[i]));
      const onnx = await model.toOnnx();
      // the exported decoder, imported back in the page, gives the model's outputs
      const imported = await pg.loadOnnx(onnx);
      const viaOnnx = await (await imported.run({ input: x })).output.data();
      let onnxDiff = 0;
      for (let i = 0; i < out.length; i++) onnxDiff = Math.max(onnxDiff, Math.abs(out[i] - viaOnnx[i]));
      return {
        backend: rt.backend, shape: y.shape, loss: h.history.loss, accuracy: right / (128 * (HALF + 1)),
        evalAccuracy: ev.accuracy, diff, onnxBytes: onnx.byteLength, onnxDiff, onnxLength: viaOnnx.length, summary: model.summary(),
      };
    }, backend);
    console.log(`${backend} (${r.backend}): loss ${r.loss.map((l) => l.toFixed(3)).join(' -> ')}, answer accuracy ${r.accuracy.toFixed(3)}, ` +
      `evaluate accuracy ${r.evalAccuracy.toFixed(3)}, save/load max diff ${r.diff}, exported ONNX max diff ${r.onnxDiff}`);
    assert.deepEqual(r.shape, [128, 8, 9]);
    assert.ok(r.loss[r.loss.length - 1] < r.loss[0], `loss did not fall: ${r.loss}`);
    assert.ok(r.accuracy >= 0.9, `answer accuracy ${r.accuracy} (chance 1/8)`);
    // every position counts in evaluate's accuracy, the random first digits too: above chance
    assert.ok(r.evalAccuracy > 0.5 && r.evalAccuracy <= 1, `evaluate accuracy ${r.evalAccuracy}`);
    assert.equal(r.diff, 0, 'the loaded model predicts other values');
    assert.ok(r.onnxBytes > 1000, 'toOnnx wrote no model');
    assert.equal(r.onnxLength, 128 * 8 * 9);
    assert.ok(r.onnxDiff < 1e-4, `the exported ONNX model differs by ${r.onnxDiff}`);
    assert.match(r.summary, /transformerBlock/);
  });
}

test('bad transformer layer options are PixelgradErrors of kind invalid naming the option', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const emb = (o = {}) => pg.layers.embedding({ inputDim: 9, outputDim: 8, inputShape: [4], ...o });
    const cases = {
      inputDim: () => pg.sequential([emb({ inputDim: 0 })]),
      outputDim: () => pg.sequential([pg.layers.embedding({ inputDim: 9, inputShape: [4] })]),
      sequenceLength: () => pg.sequential([emb(), pg.layers.positionEmbedding({ sequenceLength: 2 })]),
      epsilon: () => pg.sequential([emb(), pg.layers.layerNormalization({ epsilon: -1 })]),
      epsilonn: () => pg.sequential([emb(), pg.layers.rmsNormalization({ epsilonn: 1e-5 })]),
      numHeads: () => pg.sequential([emb(), pg.layers.multiHeadAttention({ numHeads: 3 })]),
      numKeyValueHeads: () => pg.sequential([emb(), pg.layers.multiHeadAttention({ numHeads: 4, numKeyValueHeads: 3 })]),
      activation: () => pg.sequential([emb(), pg.layers.transformerBlock({ numHeads: 2, intermediateDim: 8, activation: 'relu' })]),
      normalization: () => pg.sequential([emb(), pg.layers.transformerBlock({ numHeads: 2, intermediateDim: 8, normalization: 'batch' })]),
      intermediateDim: () => pg.sequential([emb(), pg.layers.transformerBlock({ numHeads: 2 })]),
      dropout: () => pg.sequential([emb(), pg.layers.transformerBlock({ numHeads: 2, intermediateDim: 8, dropout: 1.5 })]),
      options: () => pg.layers.transformerBlock(4),
      targets: async () => {
        const m = pg.sequential([emb(), pg.layers.dense({ units: 9 })]);
        m.compile({ optimizer: 'adam', loss: 'softmaxCrossEntropy' });
        await m.fit(pg.tensor(new Float32Array(8), [2, 4]), pg.tensor(new Float32Array(2), [2]));
      },
      tokenId: async () => {
        const m = pg.sequential([emb(), pg.layers.dense({ units: 9 })]);
        await m.predict(pg.tensor(new Float32Array([0, 1, 2, 9]), [1, 4])).data();
      },
    };
    const out = {};
    for (const [name, f] of Object.entries(cases)) {
      try {
        await f();
        out[name] = null;
      } catch (e) {
        out[name] = { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message };
      }
    }
    return out;
  });
  for (const [name, e] of Object.entries(r)) {
    assert.ok(e, `${name}: no error`);
    assert.ok(e.pg, `${name}: not a PixelgradError: ${JSON.stringify(e)}`);
    assert.ok(e.op, `${name}: no op: ${JSON.stringify(e)}`);
    if (name === 'targets' || name === 'tokenId') {
      assert.ok(['shape', 'invalid'].includes(e.kind), `${name}: ${JSON.stringify(e)}`);
    } else {
      assert.equal(e.kind, 'invalid', `${name}: ${JSON.stringify(e)}`);
    }
  }
  // the messages name the option (or what is wrong with it)
  const names = { numHeads: /heads/, numKeyValueHeads: /key\/value heads/, options: /options object/, targets: /every position/, tokenId: /token id 9/ };
  for (const [name, e] of Object.entries(r)) {
    const want = names[name] || new RegExp(name);
    assert.match(e.message, want, `${name}: ${e.message}`);
  }
});
