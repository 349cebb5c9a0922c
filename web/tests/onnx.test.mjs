// `pg.loadOnnx` in headless Chromium on webgpu, webgl and cpu (SwiftShader for the GPU
// backends): every per-operator fixture of scripts/onnx-fixtures.sh, the pretrained PP-OCR
// text direction classifier and the small transformer exports in every variant (issue 42)
// against onnxruntime's outputs (1e-4 relative), model metadata,
// the URL / bytes / IndexedDB sources, and errors as JS Errors.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPage } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const webRoot = path.resolve(here, '..');
const bundle = path.join(webRoot, 'test-artifacts', 'onnx');

/** Reads a .npy file (float32, int64, int32) into { dtype, shape, data }. */
function readNpy(file) {
  const b = fs.readFileSync(file);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.subarray(start, start + hlen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const raw = b.subarray(start + hlen);
  const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
  if (descr === '<f4') return { dtype: 'float32', shape, data: new Float32Array(ab) };
  if (descr === '<i8') return { dtype: 'int64', shape, data: Int32Array.from(new BigInt64Array(ab), (v) => Number(v)) };
  if (descr === '<i4') return { dtype: 'int32', shape, data: new Int32Array(ab) };
  if (descr === '|b1') return { dtype: 'bool', shape, data: Int32Array.from(new Uint8Array(ab)) };
  if (descr === '|u1') return { dtype: 'uint8', shape, data: Int32Array.from(new Uint8Array(ab)) };
  if (descr === '|i1') return { dtype: 'int8', shape, data: Int32Array.from(new Int8Array(ab)) };
  throw new Error(`${file}: npy type ${descr} not handled by the test`);
}

/** Copies the fixtures the page needs into web/test-artifacts/onnx (served with web/). */
function makeBundle() {
  execFileSync('bash', [path.join(repo, 'scripts', 'onnx-fixtures.sh')], { stdio: 'inherit' });
  const fx = path.join(repo, 'target', 'onnx-fixtures');
  const manifest = JSON.parse(fs.readFileSync(path.join(fx, 'manifest.json'), 'utf8'));
  fs.rmSync(bundle, { recursive: true, force: true });
  fs.mkdirSync(bundle, { recursive: true });
  const cases = [];
  // The per-operator cases, the PP-OCR classifier and the small quantised models (squeezenet's
  // three quantised forms only run natively: they are the slowest).
  const quantized = (c) => c.kind === 'models' && c.tags.includes('int8') && !c.name.startsWith('squeezenet');
  // and the small transformer exports of scripts/onnx_transformer_fixtures.py in every variant
  // (issue 42; tag 'transformer', run by the tests of their own below)
  const transformer = (c) => c.kind === 'models' && c.tags.includes('transformer');
  for (const c of manifest.cases.filter((c) => c.kind === 'ops' || c.name === 'ppocr_cls' || quantized(c) || transformer(c))) {
    const id = `${c.kind}-${c.name}`;
    fs.copyFileSync(path.join(fx, c.dir, 'model.onnx'), path.join(bundle, `${id}.onnx`));
    // the `external` variant: its weights in model.onnx_data beside it, given to loadOnnx by URL
    let externalData;
    if (fs.existsSync(path.join(fx, c.dir, 'model.onnx_data'))) {
      fs.copyFileSync(path.join(fx, c.dir, 'model.onnx_data'), path.join(bundle, `${id}.onnx_data`));
      externalData = { 'model.onnx_data': `/test-artifacts/onnx/${id}.onnx_data` };
    }
    const io = (list, what) => list.map((e, k) => {
      const t = readNpy(path.join(fx, c.dir, e.file));
      // expected outputs are compared as float32, whatever their element type
      if (what === 'out' && t.dtype !== 'float32') t.data = Float32Array.from(t.data);
      const file = `${id}.${what}${k}.bin`;
      fs.writeFileSync(path.join(bundle, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      return { name: e.name, file, shape: t.shape, dtype: t.dtype };
    });
    cases.push({ name: c.name, kind: c.kind, tags: c.tags, model: `${id}.onnx`, externalData, inputs: io(c.inputs, 'in'), outputs: io(c.outputs, 'out'), tol: c.tol, atol: c.atol });
  }
  // the model whose weights onnx saved in model.onnx_data beside it, with input and output
  const ext = path.join(fx, 'external', 'external_one_file');
  fs.copyFileSync(path.join(ext, 'model.onnx'), path.join(bundle, 'external.onnx'));
  fs.copyFileSync(path.join(ext, 'model.onnx_data'), path.join(bundle, 'external.onnx_data'));
  for (const [file, npy] of [['external.in.bin', 'input_0.npy'], ['external.out.bin', 'expected_0.npy']]) {
    const t = readNpy(path.join(ext, npy));
    fs.writeFileSync(path.join(bundle, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return cases;
}

let page;
let close;
let cases;

before(async () => {
  cases = makeBundle();
  ({ page, close } = await openPage('tests/pages/api.html', { ready: true }));
});

after(async () => {
  await close?.();
  fs.rmSync(bundle, { recursive: true, force: true });
});

function inPage(fn, arg) {
  return page.evaluate(([src, a]) => {
    // eslint-disable-next-line no-new-func
    const f = new Function('pg', 'arg', `return (${src})(pg, arg);`);
    return f(window.pg, a);
  }, [fn.toString(), arg]);
}

/** Runs the cases in the page on `backend`; per case the worst relative error or the error text. */
async function runCases(backend, list) {
  return inPage(async (pg, { backend, list }) => {
    await pg.init({ backend, allowSoftware: true });
    const get = async (f) => (await fetch(`/test-artifacts/onnx/${f}`)).arrayBuffer();
    const out = [];
    for (const c of list) {
      const t0 = performance.now();
      try {
        const m = await pg.loadOnnx(`/test-artifacts/onnx/${c.model}`, c.externalData ? { externalData: c.externalData } : {});
        const feeds = {};
        for (const i of c.inputs) {
          const buf = await get(i.file);
          const data = i.dtype === 'float32' ? new Float32Array(buf) : new Int32Array(buf);
          feeds[i.name] = pg.tensor(data, i.shape);
        }
        // On the CPU a second run replays the kernels the first recorded: both are checked.
        let worst = 0;
        for (let run = 0; run < (backend === 'cpu' ? 2 : 1); run++) {
          const res = await m.run(feeds);
          for (const o of c.outputs) {
            const want = new Float32Array(await get(o.file));
            const t = res[o.name];
            if (!t) throw new Error(`no output ${o.name}`);
            if (JSON.stringify(t.shape) !== JSON.stringify(o.shape)) throw new Error(`output ${o.name}: shape [${t.shape}] vs [${o.shape}]`);
            const got = await t.data();
            let scale = 1e-6;
            for (const v of want) scale = Math.max(scale, Math.abs(v));
            let d = 0;
            for (let k = 0; k < want.length; k++) d = Math.max(d, Math.abs(got[k] - want[k]));
            // quantised cases: the absolute error over one quantisation step (exact ones: any
            // difference fails); the others: the relative error over the case's tolerance
            const e = c.atol === undefined ? d / scale / Math.max(c.tol, 1e-30) : c.atol === 0 ? (d === 0 ? 0 : Infinity) : d / c.atol;
            worst = Math.max(worst, Number.isFinite(e) ? e : Infinity);
            t.dispose();
          }
        }
        Object.values(feeds).forEach((t) => t.dispose());
        m.dispose();
        out.push({ name: c.name, err: worst, ms: performance.now() - t0 });
      } catch (e) {
        out.push({ name: c.name, error: String(e && e.message ? e.message : e) });
      }
    }
    return out;
  }, { backend, list });
}

/** The transformer exports (tag 'transformer'), every variant. */
const transformers = () => cases.filter((c) => c.tags.includes('transformer'));

for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`${backend}: every ONNX operator case, the PP-OCR classifier and the quantised models match onnxruntime`, async () => {
    const list = cases.filter((c) => !c.tags.includes('transformer'));
    const res = await runCases(backend, list);
    // (cases tagged reads_back, NonMaxSuppression and NonZero, read values back while the
    // graph runs: on WebGPU that is an asynchronous read inside m.run)
    const bad = res.filter((r) => r.error || !(r.err <= 1));
    const worst = Math.max(...res.filter((r) => !r.error).map((r) => r.err));
    console.log(`${backend}: ${res.length} cases, worst error ${worst.toExponential(2)} of the tolerance`);
    assert.equal(res.length, list.length);
    assert.deepEqual(bad, [], `${bad.length} cases failed on ${backend}`);
  });
}

// The small transformer exports of issue 42 (crates/pixelgrad-onnx/tests/transformers.rs runs the
// same cases natively): the BERT-like encoder, the GPT-like decoder without and with a past
// key/value cache, the merged decoder (If) fed with and without the cache, the ViT-like and the
// Whisper-like encoders, each as exported (fp32), fused by onnxruntime's transformer optimiser
// (ortopt), 4-bit MatMulNBits (nbits4), dynamic int8 (dynint8) and with its weights in
// model.onnx_data loaded through `loadOnnx(url, { externalData })` (external); and the Llama-like
// opset 23 decoders against the onnx reference evaluator's stored outputs (opset23). Each within
// its case's tolerance (1e-4 relative), the CPU running every case twice (the second replays).
const ARCHS = ['bert', 'gpt', 'gpt_past', 'gpt_merged_cache', 'gpt_merged_no_cache', 'vit', 'whisper'];
for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`${backend}: the transformer exports in every variant (fp32, ortopt, nbits4, dynint8, external, opset23) match onnxruntime`, async () => {
    const list = transformers();
    // the generator wrote every case (a missing one fails here rather than shrinking the test)
    const want = ARCHS.flatMap((a) => ['fp32', 'nbits4', 'dynint8', 'external'].map((v) => `${a}_${v}`))
      .concat(['bert', 'gpt', 'gpt_past', 'vit', 'whisper'].map((a) => `${a}_ortopt`), ['llama_opset23', 'llama_past_opset23']);
    assert.deepEqual(list.map((c) => c.name).sort(), want.sort());
    assert.equal(list.filter((c) => c.externalData).length, ARCHS.length);
    const t0 = Date.now();
    const res = await runCases(backend, list);
    const bad = res.filter((r) => r.error || !(r.err <= 1));
    const worst = Math.max(...res.filter((r) => !r.error).map((r) => r.err));
    console.log(`${backend}: ${res.length} transformer cases in ${((Date.now() - t0) / 1000).toFixed(1)} s, worst error ${worst.toExponential(2)} of the tolerance`);
    for (const r of res) console.log(`  ${r.name.padEnd(28)} ${r.error ?? `${r.err.toExponential(2)} of the tolerance, ${(r.ms / 1000).toFixed(1)} s`}`);
    assert.equal(res.length, list.length);
    assert.deepEqual(bad, [], `${bad.length} transformer cases failed on ${backend}`);
  });
}

test("loadOnnx({ precision: 'f16' }): half the weight bytes on every backend (WebGL2 stores f16 and 8-bit too), within 1e-2; int8 info", async () => {
  const c = cases.find((c) => c.name === 'ppocr_cls');
  const q = cases.find((c) => c.name === 'ppocr_cls_qdq_u8');
  const r = await inPage(async (pg, { c, q }) => {
    const get = async (f) => (await fetch(`/test-artifacts/onnx/${f}`)).arrayBuffer();
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      const x = pg.tensor(new Float32Array(await get(c.inputs[0].file)), c.inputs[0].shape);
      const want = new Float32Array(await get(c.outputs[0].file));
      const res = {};
      for (const precision of ['f32', 'f16']) {
        const m = await pg.loadOnnx(`/test-artifacts/onnx/${c.model}`, { precision });
        const got = await (await m.run({ x }))[c.outputs[0].name].data();
        let d = 0;
        let scale = 1e-6;
        for (let k = 0; k < want.length; k++) {
          d = Math.max(d, Math.abs(got[k] - want[k]));
          scale = Math.max(scale, Math.abs(want[k]));
        }
        res[precision] = { err: d / scale, info: m.info };
        m.dispose();
      }
      const qm = await pg.loadOnnx(`/test-artifacts/onnx/${q.model}`);
      const xq = pg.tensor(new Float32Array(await get(q.inputs[0].file)), q.inputs[0].shape);
      const y8 = await (await qm.run({ x: xq }))[q.outputs[0].name].data();
      res.int8 = qm.info;
      qm.dispose();
      // The same model with its quantised activations in f32: the same output, bit for bit.
      const qf = await pg.loadOnnx(`/test-artifacts/onnx/${q.model}`, { int8Activations: 'f32' });
      const y32 = await (await qf.run({ x: xq }))[q.outputs[0].name].data();
      res.int8f32 = { storage: qf.info.activationStorage, same: y8.length === y32.length && y8.every((v, k) => Object.is(v, y32[k])) };
      qf.dispose();
      try {
        await pg.loadOnnx(`/test-artifacts/onnx/${q.model}`, { int8Activations: 'i4' });
        res.badActs = null;
      } catch (e) {
        res.badActs = e.message;
      }
      let bad = null;
      try {
        await pg.loadOnnx(`/test-artifacts/onnx/${c.model}`, { precision: 'f8' });
      } catch (e) {
        bad = e.message;
      }
      res.bad = bad;
      out[backend] = res;
      x.dispose();
      xq.dispose();
    }
    return out;
  }, { c, q });
  for (const [backend, res] of Object.entries(r)) {
    console.log(`${backend}: f16 rel err ${res.f16.err.toExponential(2)}, storage ${res.f16.info.weightStorage}, device weight bytes f16 ${res.f16.info.deviceWeightBytes} / f32 ${res.f32.info.deviceWeightBytes}; int8 ${res.int8.path}, ${res.int8.deviceWeightBytes} bytes`);
    assert.ok(res.f32.err < 1e-4, `${backend} f32: ${res.f32.err}`);
    assert.ok(res.f16.err < 1e-2, `${backend} f16: ${res.f16.err}`);
    assert.equal(res.f32.info.weightStorage, 'f32');
    assert.equal(res.f32.info.precision, 'f32');
    assert.match(res.bad, /precision 'f8'/);
    assert.equal(res.int8.precision, 'mixed');
    assert.ok(res.int8.precisionGroups.int8.QLinearConv > 10);
    const ratio = res.f16.info.deviceWeightBytes / res.f32.info.deviceWeightBytes;
    // WebGL2 keeps f16 bit patterns and 8-bit weights in integer textures, like the others.
    assert.equal(res.f16.info.weightStorage, 'f16', backend);
    assert.ok(ratio > 0.45 && ratio < 0.55, `${backend}: f16/f32 device weight bytes ${ratio}`);
    assert.match(res.int8.path, /^i8 weights stored 8-bit/);
    assert.ok(res.int8.deviceWeightBytes < 0.35 * res.f32.info.deviceWeightBytes, `${backend}: int8 ${res.int8.deviceWeightBytes}`);
    // Quantised activations held between nodes are 8-bit tensors on every backend here.
    assert.equal(res.int8.activationStorage, '8-bit', backend);
    assert.ok(res.int8.activationBytes > 0, `${backend}: ${res.int8.activationBytes}`);
    assert.deepEqual(res.int8f32, { storage: 'f32', same: true }, backend);
    assert.match(res.badActs ?? '', /int8Activations 'i4'/);
  }
});

test('loadOnnx: metadata, byte and IndexedDB sources, errors', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const url = '/test-artifacts/onnx/models-ppocr_cls.onnx';
    const bytes = await (await fetch(url)).arrayBuffer();
    const m = await pg.loadOnnx(bytes);
    const meta = { inputs: m.inputs, outputs: m.outputs, backend: m.backend };
    await m.save('indexeddb://ppocr-cls');
    const again = await pg.loadOnnx('indexeddb://ppocr-cls');
    const x = pg.tensor(new Float32Array(3 * 48 * 100).fill(0.5), [1, 3, 48, 100]);
    const a = await (await m.run({ x }))[m.outputs[0].name].data();
    const b = await (await again.run({ x }))[m.outputs[0].name].data();
    const errors = [];
    for (const f of [
      () => pg.loadOnnx(new Uint8Array([1, 2, 3, 4, 5])),
      () => pg.loadOnnx('/test-artifacts/onnx/nope.onnx'),
      () => pg.loadOnnx('indexeddb://not-saved'),
      () => m.run({ image: x }),
      () => m.run({ x: pg.tensor(new Float32Array(6), [2, 3]) }),
      () => pg.loadModel('indexeddb://ppocr-cls'),
    ]) {
      try {
        await f();
        errors.push(null);
      } catch (e) {
        errors.push(e instanceof Error ? e.message : `not an Error: ${e}`);
      }
    }
    m.dispose();
    let disposed = null;
    try {
      await m.run({ x });
    } catch (e) {
      disposed = e.message;
    }
    return { meta, same: a.length === 2 && a.every((v, i) => v === b[i]), errors, disposed };
  });
  assert.deepEqual(r.meta.inputs, [{ name: 'x', shape: [null, 3, '?', '?'], dtype: 'float' }]);
  assert.equal(r.meta.outputs[0].name, 'save_infer_model/scale_0.tmp_1');
  assert.equal(r.meta.backend, 'cpu');
  assert.ok(r.same, 'the IndexedDB copy gives the same output');
  const [junk, missing, notSaved, wrongName, wrongShape, asSequential] = r.errors;
  assert.match(junk, /not a valid ONNX model/);
  assert.match(missing, /HTTP 404/);
  assert.match(notSaved, /no model named 'not-saved'/);
  assert.match(wrongName, /input 'image': the model has no such input/);
  assert.match(wrongShape, /input 'x': has shape \[2, 3\] but the model expects \[\?, 3, \?, \?\]/);
  assert.match(asSequential, /is an ONNX model; load it with pg.loadOnnx/);
  assert.match(r.disposed, /disposed/);
});

test('loadOnnx({ externalData }) by URL and bytes, inspectOnnx and m.info describe a model; a missing data file is named', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const get = async (f) => (await fetch(`/test-artifacts/onnx/${f}`)).arrayBuffer();
    const x = pg.tensor(new Float32Array(await get('external.in.bin')), [2, 4]);
    const want = Array.from(new Float32Array(await get('external.out.bin')));
    const byUrl = await pg.loadOnnx('/test-artifacts/onnx/external.onnx', { externalData: { 'model.onnx_data': '/test-artifacts/onnx/external.onnx_data' } });
    const byBytes = await pg.loadOnnx(await get('external.onnx'), { externalData: { 'model.onnx_data': new Uint8Array(await get('external.onnx_data')) } });
    const a = Array.from(await (await byUrl.run({ x }))[byUrl.outputs[0].name].data());
    const b = Array.from(await (await byBytes.run({ x }))[byBytes.outputs[0].name].data());
    const info = byUrl.info;
    const report = await pg.inspectOnnx('/test-artifacts/onnx/external.onnx');
    const ifReport = await pg.inspectOnnx('/test-artifacts/onnx/ops-if_data_condition.onnx');
    const errors = [];
    for (const f of [
      () => pg.loadOnnx('/test-artifacts/onnx/external.onnx'),
      () => pg.loadOnnx('/test-artifacts/onnx/external.onnx', { externalData: { 'other.bin': new Uint8Array(4) } }),
      () => pg.loadOnnx('/test-artifacts/onnx/external.onnx', { externalData: { 'model.onnx_data': '/test-artifacts/onnx/nope.bin' } }),
      () => byUrl.save('indexeddb://external'),
    ]) {
      try {
        await f();
        errors.push(null);
      } catch (e) {
        errors.push(e instanceof Error ? `${e.constructor.name}: ${e.message}` : `not an Error: ${e}`);
      }
    }
    byUrl.dispose();
    byBytes.dispose();
    return { a, b, want, info, report, ifReport, errors };
  });
  for (const got of [r.a, r.b]) {
    assert.equal(got.length, r.want.length);
    got.forEach((v, i) => assert.ok(Math.abs(v - r.want[i]) <= 1e-5 * Math.max(1, Math.abs(r.want[i])), `${v} vs ${r.want[i]}`));
  }
  assert.deepEqual(r.info.operators.map((o) => [o.op, o.count, o.backends.webgpu]), [['Add', 1, true], ['MatMul', 2, true], ['Relu', 1, true]]);
  assert.equal(r.info.weightBytesByType.float.bytes, (32 + 8 + 24) * 4);
  assert.equal(r.info.externalData['model.onnx_data'], (32 + 8 + 24) * 4);
  assert.equal(r.info.loads, true);
  assert.equal(r.info.weightStorage, 'f32');
  // without its data the model does not load, and the report says why, naming the file
  assert.equal(r.report.loads, false);
  assert.match(r.report.refused[0], /external file 'model.onnx_data'/);
  assert.deepEqual(r.report.inputs, [{ name: 'x', shape: [2, 4], dtype: 'float' }]);
  assert.equal(r.ifReport.nodes, 7);
  assert.equal(r.ifReport.loads, true);
  const [none, other, missing, save] = r.errors;
  assert.match(none, /^PixelgradError: .*external file 'model.onnx_data'/);
  assert.match(other, /model.onnx_data.*not given \(given: 'other.bin'\)/);
  assert.match(missing, /externalData 'model.onnx_data'.*HTTP 404/);
  assert.match(save, /externalData files, which save would leave out/);
});

for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`${backend}: frozen layers, weights by name, toOnnx back through loadOnnx`, async () => {
    const r = await inPage(async (pg, backend) => {
      await pg.init({ backend, allowSoftware: true });
      const d = pg.data.digits();
      const n = 256;
      const x = pg.tensor(d.train.x.slice(0, n * 64), [n, 8, 8, 1]);
      const y = pg.tensor(d.train.y.slice(0, n), [n]);
      const layers = () => [
        pg.layers.conv2d({ filters: 4, kernelSize: 3, padding: 'same', activation: 'relu', inputShape: [8, 8, 1], trainable: false }),
        pg.layers.maxPooling2d({ poolSize: 2 }),
        pg.layers.flatten(),
        pg.layers.dense({ units: 10 }),
      ];
      const model = pg.sequential(layers(), { seed: 3 });
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
      const before = await model.getWeights();
      await model.fit(x, y, { epochs: 2, batchSize: 32, seed: 1 });
      const after = await model.getWeights();
      const same = async (a, b) => {
        const [u, v] = [await a.data(), await b.data()];
        return u.length === v.length && u.every((e, i) => e === v[i]);
      };
      const names = Object.keys(after);
      const frozen = (await same(before['1.weight'], after['1.weight'])) && (await same(before['1.bias'], after['1.bias']));
      const headMoved = !(await same(before['5.weight'], after['5.weight']));
      const xt = pg.tensor(d.test.x.slice(0, 16 * 64), [16, 8, 8, 1]);
      const want = await model.predict(xt).data();
      // the same weights in a fresh model give the same predictions
      const copy = pg.sequential(layers(), { seed: 99 });
      await copy.setWeights(after);
      const copied = await copy.predict(xt).data();
      // ONNX export, imported again on this backend
      const bytes = await model.toOnnx();
      const m = await pg.loadOnnx(bytes);
      const got = await (await m.run({ input: xt })).output.data();
      let err = 0;
      let scale = 1e-6;
      for (let i = 0; i < want.length; i++) {
        err = Math.max(err, Math.abs(got[i] - want[i]));
        scale = Math.max(scale, Math.abs(want[i]));
      }
      let badName = null;
      try {
        await copy.setWeights({ '9.weight': new Float32Array(4) });
      } catch (e) {
        badName = e.message;
      }
      let badShape = null;
      try {
        await copy.setWeights({ '5.bias': pg.tensor(new Float32Array(3), [3]) });
      } catch (e) {
        badShape = e.message;
      }
      return {
        names, frozen, headMoved, copiedSame: copied.every((v, i) => v === want[i]), onnxBytes: bytes.length,
        inputs: m.inputs, rel: err / scale, badName, badShape,
      };
    }, backend);
    assert.deepEqual(r.names, ['1.weight', '1.bias', '5.weight', '5.bias']);
    assert.ok(r.frozen, 'the trainable: false conv changed during fit');
    assert.ok(r.headMoved, 'the dense head did not train');
    assert.ok(r.copiedSame, 'setWeights did not reproduce the predictions');
    assert.ok(r.onnxBytes > 1000);
    assert.deepEqual(r.inputs, [{ name: 'input', shape: ['N', 8, 8, 1], dtype: 'float' }]);
    assert.ok(r.rel < 1e-4, `exported model differs by ${r.rel}`);
    assert.match(r.badName, /no weight '9.weight'/);
    assert.match(r.badShape, /has shape \[10\], got \[3\]/);
  });
}

test('cpu: a frozen imported PP-OCR backbone with a new dense head learns digits in the page', async () => {
  const r = await inPage(async (pg) => {
    await pg.init({ backend: 'cpu' });
    const backbone = await pg.loadOnnx('/test-artifacts/onnx/models-ppocr_cls.onnx');
    const d = pg.data.digits();
    // 8x8 digits in [0, 1] -> 48x48x3 NHWC, dark on light in [-1, 1] (the classifier's range)
    const images = (x, n) => {
      const out = new Float32Array(n * 48 * 48 * 3);
      for (let s = 0; s < n; s++) {
        for (let y = 0; y < 48; y++) {
          for (let xx = 0; xx < 48; xx++) {
            const v = 1 - 2 * x[s * 64 + Math.floor(y / 6) * 8 + Math.floor(xx / 6)];
            for (let c = 0; c < 3; c++) out[((s * 48 + y) * 48 + xx) * 3 + c] = v;
          }
        }
      }
      return pg.tensor(out, [n, 48, 48, 3]);
    };
    const [ntr, nte] = [240, 120];
    const x = images(d.train.x, ntr);
    const y = pg.tensor(d.train.y.slice(0, ntr), [ntr]);
    const xt = images(d.test.x, nte);
    const yt = pg.tensor(d.test.y.slice(0, nte), [nte]);
    const model = pg.sequential([
      pg.layers.onnx({ model: backbone, output: 'reshape2_0.tmp_0', inputShape: [48, 48, 3], trainable: false }),
      pg.layers.dense({ units: 10 }),
    ], { seed: 5 });
    model.compile({ optimizer: pg.optimizers.adam(2e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
    const w0 = await model.getWeights();
    const before = await model.evaluate(xt, yt);
    await model.fit(x, y, { epochs: 5, batchSize: 32, seed: 1 });
    const after = await model.evaluate(xt, yt);
    const w1 = await model.getWeights();
    const frozenName = Object.keys(w0).find((k) => k.startsWith('1.')); // layer 0 turns NHWC into NCHW
    const [a, b] = [await w0[frozenName].data(), await w1[frozenName].data()];
    let saveError = null;
    try {
      await model.save('indexeddb://with-onnx');
    } catch (e) {
      saveError = e.message;
    }
    const onnx = await model.toOnnx();
    const m2 = await pg.loadOnnx(onnx);
    const want = await model.predict(xt).data();
    const got = await (await m2.run({ input: xt })).output.data();
    let err = 0;
    let scale = 1e-6;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(got[i] - want[i]));
      scale = Math.max(scale, Math.abs(want[i]));
    }
    return {
      before: before.accuracy, after: after.accuracy, frozen: a.every((v, i) => v === b[i]), summary: model.summary(),
      saveError, rel: err / scale,
    };
  });
  console.log(`frozen PP-OCR backbone + head in the page (cpu): held-out accuracy ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`);
  assert.ok(r.after > r.before + 0.2 && r.after > 0.3, `held-out accuracy ${r.before} -> ${r.after}`);
  assert.ok(r.frozen, 'the frozen backbone changed');
  assert.match(r.summary, /onnx/);
  assert.match(r.saveError, /saves as ONNX/);
  assert.ok(r.rel < 1e-4, `the exported fine-tuned model differs by ${r.rel}`);
});
