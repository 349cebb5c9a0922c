// The inference benchmark's pure helpers: agreement measure, ratios and the BENCHMARKS.md table.
import test from 'node:test';
import assert from 'node:assert/strict';
import { maxRelDiff, argmax, rows, renderMarkdown, tokensPerSecond, START, END } from '../lib/inference-report.mjs';

test('maxRelDiff is relative to the reference and refuses mismatched outputs', () => {
  assert.equal(maxRelDiff([1, 2, 3], [1, 2, 3]), 0);
  assert.equal(maxRelDiff([1, 2, 4.5], [1, 2, 5]), 0.1);
  assert.equal(maxRelDiff([1, 2], [1, 2, 3]), Infinity);
  assert.equal(maxRelDiff([NaN], [1]), Infinity);
  assert.equal(maxRelDiff([], []), Infinity);
  assert.equal(argmax([0.1, 3, -2, 2.9]), 1);
});

function result() {
  const run = (lib, backend, medianMs, output, extra = {}) => ({ lib, backend, model: 'm', firstRunMs: medianMs * 10, medianMs, runs: 5, output, ...extra });
  return {
    date: '2026-12-01T00:00:00Z',
    settings: { rounds: 8, chunkMs: 800 },
    machine: { cpu: 'cpu', cores: 2, commit: 'abc1234' },
    ort: 'onnxruntime-web 1.30.0',
    browser: 'Chromium 1',
    models: [{ name: 'm', input: 'x', shape: [1, 3], about: 'a model' }],
    runs: [
      run('pixelgrad', 'webgpu', 10, [1, 2]),
      run('ort', 'webgpu', 20, [1, 2]),
      run('pixelgrad', 'webgl', 40, [1, 2.2]),
      run('ort', 'webgl', 20, [1, 2]),
      run('pixelgrad', 'cpu', 5, [1, 2]),
      { lib: 'ort', backend: 'wasm', model: 'm', medianMs: 5, firstRunMs: 6, output: [1, 2] },
    ],
  };
}

test('rows pair the libraries per backend and compare outputs with ORT wasm', () => {
  const r = rows(result());
  assert.equal(r.length, 3);
  assert.equal(r[0].ratio, 2);
  assert.equal(r[1].ratio, 0.5);
  assert.ok(Math.abs(r[1].error - 0.1) < 1e-12);
  assert.equal(r[2].ratio, 1);
});

test('a committed result (outputs kept as their first values) is compared on those values, not marked wrong', () => {
  const res = result();
  res.runs = res.runs.map(({ output, ...r }) => ({ ...r, outputHead: output }));
  const r = rows(res);
  assert.equal(r[0].error, 0);
  assert.ok(Math.abs(r[1].error - 0.1) < 1e-12);
  assert.equal(r[0].ortError, 0);
  assert.doesNotMatch(renderMarkdown(res, 'web/bench/results/x.json'), /ORT output wrong|Infinity/);
});

test('a failed run shows as failed, with no ratio', () => {
  const res = result();
  res.runs[1] = { lib: 'ort', backend: 'webgpu', model: 'm', error: 'init: no adapter' };
  const r = rows(res);
  assert.equal(r[0].ratio, null);
  const md = renderMarkdown(res, 'web/bench/results/x.json');
  assert.ok(md.startsWith(START) && md.trimEnd().endsWith(END));
  assert.match(md, /failed: init: no adapter/);
  assert.match(md, /\| m \| webgl \/ webgl \| 400 \| 40\.0 \| 200 \| 20\.0 \| 0\.50× \| 1\.0e-1 \/ 0\.0e\+0 \| — \/ — \|/);
});

test('precision rows show both libraries\' weight bytes and name their base model', () => {
  const res = result();
  res.models.push({ name: 'm int8', input: 'x', shape: [1, 3], base: 'm', form: 'int8', about: '' });
  const run = (lib, backend, medianMs, weightBytes) => ({ lib, backend, model: 'm int8', firstRunMs: 1, medianMs, runs: 3, output: [1, 2], weightBytes });
  res.runs.push(run('pixelgrad', 'cpu', 4, 3072), run('ort', 'wasm', 2, 4096));
  const md = renderMarkdown(res, 'web/bench/results/x.json');
  assert.match(md, /\| m int8 \| cpu \/ wasm \| 1\.00 \| 4\.00 \| 1\.00 \| 2\.00 \| 0\.50× \| 0\.0e\+0 \| 3 KiB \/ 4 KiB \|/);
  assert.match(md, /- m int8: input `x` \[1,3\]; m in int8/);
});

test('decoder rows (generate) give tokens/s and say whether pixelgrad generated ORT wasm\'s tokens; inputs are listed', () => {
  const res = result();
  const generate = { promptLength: 16, newTokens: 16, layers: 4, heads: 4, headSize: 64 };
  res.models = [
    { name: 'dec', input: 'input_ids', shape: [1, 1], generate },
    { name: 'enc', input: 'input_ids', shape: [1, 4], inputs: [{ name: 'input_ids', shape: [1, 4], dtype: 'int64' }, { name: 'attention_mask', shape: [1, 4], dtype: 'int64' }] },
  ];
  const run = (lib, backend, model, medianMs, tokens) => ({ lib, backend, model, firstRunMs: 1, medianMs, runs: 3, output: [1, 2], tokens });
  res.runs = [
    run('pixelgrad', 'webgpu', 'dec', 400, [3, 1, 4]),
    run('ort', 'webgpu', 'dec', 800, [3, 1, 4]),
    run('pixelgrad', 'cpu', 'dec', 200, [3, 1, 5]),
    run('ort', 'wasm', 'dec', 100, [3, 1, 4]),
    run('pixelgrad', 'cpu', 'enc', 2, undefined),
    run('ort', 'wasm', 'enc', 1, undefined),
  ];
  assert.equal(tokensPerSecond(res.models[0], res.runs[0]), 40);
  assert.equal(tokensPerSecond(res.models[1], res.runs[4]), null);
  const r = rows(res);
  assert.deepEqual(r.map((x) => [x.model, x.pair, x.sameTokens]), [['dec', 'webgpu / webgpu', true], ['dec', 'cpu / wasm', false], ['enc', 'cpu / wasm', null]]);
  const md = renderMarkdown(res, 'web/bench/results/x.json');
  assert.match(md, /\| dec \| webgpu \/ webgpu \| 1\.00 \| 400 \(40\.0 tok\/s\) \| 1\.00 \| 800 \(20\.0 tok\/s\) \| 2\.00× \| 0\.0e\+0 \/ 0\.0e\+0, same tokens \|/);
  assert.match(md, /\| dec \| cpu \/ wasm \| .* \| 0\.0e\+0, tokens differ \|/);
  assert.match(md, /\| enc \| cpu \/ wasm \| 1\.00 \| 2\.00 \| 1\.00 \| 1\.00 \| 0\.50× \| 0\.0e\+0 \|/);
  assert.match(md, /- dec: a 16-token prompt, 16 new tokens;/);
  assert.match(md, /- enc: inputs `input_ids` \[1,4\], `attention_mask` \[1,4\];/);
  assert.match(md, /one whole greedy generation/);
  // without decoders the section reads as before
  assert.doesNotMatch(renderMarkdown(result(), 'web/bench/results/x.json'), /greedy generation/);
});
