// Node-only checks of the pieces that decide what the benchmark reports: weight layout
// conversion, safetensors round trip, and ratios/verdicts.
import test from 'node:test';
import assert from 'node:assert/strict';
import { toPixelgradKernel, initialWeights, trainWorkloads, trainingData } from '../lib/workloads.mjs';
import * as st from '../lib/safetensors.mjs';
import { compare, pairTargets, renderMarkdown } from '../lib/report.mjs';

test('conv kernels go from [kh, kw, cin, cout] to [cout, cin, kh, kw]', () => {
  const k = { data: Float32Array.from({ length: 2 * 2 * 1 * 3 }, (_, i) => i), shape: [2, 2, 1, 3] };
  const p = toPixelgradKernel(k, null);
  assert.deepEqual(p.shape, [3, 1, 2, 2]);
  // filter 0 holds the elements whose last index is 0: (y, x) = (0,0), (0,1), (1,0), (1,1)
  assert.deepEqual(Array.from(p.data.subarray(0, 4)), [0, 3, 6, 9]);
});

test('a dense kernel after flatten has its rows reordered from (y, x, c) to (c, y, x)', () => {
  const [h, w, c, units] = [2, 2, 2, 1];
  // row r of the TF.js kernel holds r, so the result lists TF.js row indices in pixelgrad order
  const k = { data: Float32Array.from({ length: h * w * c * units }, (_, i) => i), shape: [h * w * c, units] };
  const p = toPixelgradKernel(k, [h, w, c]);
  // pixelgrad row (ch, y, x) = TF.js row (y * w + x) * c + ch
  assert.deepEqual(Array.from(p.data), [0, 2, 4, 6, 1, 3, 5, 7]);
});

test('initial weights and data are deterministic and shaped as TF.js expects', () => {
  const a = initialWeights(trainWorkloads.cnn);
  const b = initialWeights(trainWorkloads.cnn);
  assert.deepEqual(a[0].kernel.data, b[0].kernel.data);
  assert.deepEqual(a.map((x) => x && x.kernel.shape), [[3, 3, 1, 8], null, [3, 3, 8, 16], null, null, [400, 10]]);
  assert.deepEqual(a[5].flattenedFrom, [5, 5, 16]);
  const d = trainingData(trainWorkloads['seed-mlp']);
  assert.equal(d.x.length, d.n * 48);
  assert.ok(d.labels.every((l) => l === 0 || l === 1));
});

test('safetensors round trip keeps names, shapes, metadata and alignment', () => {
  const bytes = st.write([{ name: '0.weight', shape: [2, 3], data: new Float32Array(6).fill(1.5) }, { name: '0.bias', shape: [3], data: new Float32Array(3) }], { config: '{}' });
  assert.deepEqual(st.readHeader(bytes).map((t) => [t.name, t.shape]), [['0.weight', [2, 3]], ['0.bias', [3]]]);
  assert.deepEqual(st.readMetadata(bytes), { config: '{}' });
  const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal((8 + headerLen) % 8, 0);
  assert.equal(new DataView(bytes.buffer).getFloat32(8 + headerLen, true), 1.5);
});

const run = (lib, backend, workload, value, firstStepMs, extra = {}) => ({ lib, backend, workload, value, firstStepMs, unit: 'steps/s', ...extra });

test('ratios and verdicts follow the targets; unsupported runs give n/a', () => {
  const runs = [
    run('pixelgrad', 'webgpu', 'seed-mlp', 30, 100),
    run('tfjs', 'webgpu', 'seed-mlp', 10, 400),
    run('pixelgrad', 'cpu', 'seed-mlp', 14, 100),
    run('tfjs', 'wasm', 'seed-mlp', 10, 100),
    run('pixelgrad', 'webgl', 'seed-mlp', 1, 1),
    { lib: 'tfjs', backend: 'webgl', workload: 'seed-mlp', error: 'unsupported: no kernel' },
  ];
  const [gpu, gl, cpu] = pairTargets.map((p) => compare(runs, p, 'seed-mlp'));
  assert.equal(gpu.speed, 3);
  assert.equal(gpu.speedMet, true);
  assert.equal(gpu.first, 0.25);
  assert.equal(gpu.firstMet, true);
  assert.equal(cpu.speedMet, false); // 1.4x < 1.5x
  assert.equal(cpu.firstMet, false); // 1x > 0.5x
  assert.equal(gl.speed, null);
  const md = renderMarkdown({ date: '2026-01-01T00:00:00Z', settings: { mode: 'quick', warmupMs: 200, repeatMs: 400, repeats: 3 }, machine: { cpu: 'x', cores: 2, loadAverageAtStart: [0, 0, 0], commit: 'abc' }, browser: 'Chromium 1', runs, durationS: 1 }, 'r.json');
  assert.match(md, /\| seed-mlp \| 3× met \| n\/a \| 1\.4× missed \| 0\.25× met \|/);
  assert.match(md, /n\/a \(no kernel\)/);
});
