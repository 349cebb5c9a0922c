// docs/benchmarks.md is generated from web/bench/results/*.json: the committed page must be
// what the committed results give (so the two cannot drift), the generator must not depend on
// the order it reads files in, and each section must come from the latest run of its benchmark.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { kindOf, metaOf, renderBenchmarksDoc } from '../lib/benchmarks-doc.mjs';
import { benchmarksDoc, loadResults } from '../lib/results.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const { files, provenance } = loadResults(path.join(repoRoot, 'web', 'bench', 'results'));

test('the committed docs/benchmarks.md is what the committed results give (run `cargo xtask bench-report`)', () => {
  const have = fs.readFileSync(path.join(repoRoot, 'docs', 'benchmarks.md'), 'utf8');
  assert.equal(have, benchmarksDoc(repoRoot));
});

test('the page does not depend on the order the results are read in', () => {
  const a = renderBenchmarksDoc(files, provenance);
  const b = renderBenchmarksDoc([...files].reverse(), provenance);
  const c = renderBenchmarksDoc([...files.slice(3), ...files.slice(0, 3)], provenance);
  assert.equal(a, b);
  assert.equal(a, c);
});

test('each section comes from the latest run of its benchmark, with its date, commit and machine; older runs are listed', () => {
  const training = files.filter((f) => kindOf(f.name) === 'training');
  assert.ok(training.length >= 2);
  const latest = training.map((f) => f.json).sort((x, y) => (x.date < y.date ? -1 : 1)).pop();
  const newer = { ...latest, date: '2099-01-01T10:20:30.000Z', machine: { ...latest.machine, cpu: 'Test CPU', cores: 64, commit: 'fffffff' } };
  const doc = renderBenchmarksDoc([...files, { name: '2099-01-01T10-20-30.json', json: newer }], provenance);
  const section = doc.slice(doc.indexOf('## Training in the browser'), doc.indexOf('## Inference in the browser'));
  assert.match(section, /web\/bench\/results\/2099-01-01T10-20-30\.json/);
  assert.match(section, /2099-01-01 10:20 UTC, Test CPU \(64 cores/);
  assert.match(section, /commit fffffff/);
  const earlier = doc.slice(doc.indexOf('## Earlier runs'));
  for (const f of training) assert.ok(earlier.includes(`web/bench/results/${f.name}`), `${f.name} listed among the earlier runs`);
  assert.ok(!earlier.includes('2099-01-01T10-20-30.json'));
});

test('every result names its date, commit and machine (in the file or in provenance.json), and a file with neither is refused', () => {
  for (const f of files) {
    const m = metaOf(f, provenance);
    assert.match(m.date, /^\d{4}-\d{2}-\d{2}/, f.name);
    assert.match(m.commit, /^[0-9a-f]{7,}$/, f.name);
    assert.ok(m.machine.length > 0, f.name);
  }
  const bare = { name: 'camera-2099-01-01T00-00.json', json: { chromium: 'Chromium 1', seconds: 1, rows: [] } };
  assert.throws(() => renderBenchmarksDoc([...files, bare], provenance), /camera-2099-01-01T00-00\.json: no date and machine/);
});

test('BENCHMARKS.md points at docs/benchmarks.md and links every note in bench/notes/, and each link resolves', () => {
  const pointer = fs.readFileSync(path.join(repoRoot, 'BENCHMARKS.md'), 'utf8');
  assert.ok(pointer.includes('(docs/benchmarks.md)'));
  const notes = fs.readdirSync(path.join(repoRoot, 'bench', 'notes')).filter((n) => n.endsWith('.md'));
  assert.ok(notes.length > 0);
  for (const n of notes) {
    assert.match(n, /^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$/, 'notes are named by date and topic');
    assert.ok(pointer.includes(`(bench/notes/${n})`), `BENCHMARKS.md does not link ${n}`);
  }
  for (const [, target] of pointer.matchAll(/\]\(([^)#]+)\)/g)) assert.ok(fs.existsSync(path.join(repoRoot, target)), `BENCHMARKS.md links ${target}, which does not exist`);
});

test('the federated section shows SecAgg+ and plain rows with bytes, client stages and server stages', () => {
  const fed = {
    name: 'federated-2099-01-02T00-00-00.json',
    json: {
      date: '2099-01-02T00:00:00.000Z',
      machine: { cpu: 'Test CPU', cores: 2, memoryGiB: 8, commit: 'abcdef0' },
      about: 'about',
      rows: [
        { nodes: 4, mode: 'plain', secagg: null, bytesUpPerNodeRound: 2048, bytesDownPerNodeRound: 4096, clientSeconds: { train: 0.5 }, serverRoundSeconds: 2, serverStageSeconds: {}, finalAccuracy: 0.9 },
        { nodes: 4, mode: 'secagg+', secagg: { shares: 4, threshold: 3 }, bytesUpPerNodeRound: 4096, bytesDownPerNodeRound: 8192, clientSeconds: { train: 0.5, setup: 0.001, unmask: 0.25 }, serverRoundSeconds: 3, serverStageSeconds: { unmask: 0.5 }, finalAccuracy: 0.88 },
        { nodes: 8, mode: 'secagg+', error: 'the federation did not finish' },
      ],
    },
  };
  const doc = renderBenchmarksDoc([...files, fed], provenance);
  const section = doc.slice(doc.indexOf('## Federated learning'));
  assert.match(section, /\| 4 \| plain \| 2\.0 KiB \| 4\.0 KiB \| 500 ms \| – \| – \| – \| – \| 2000 ms \|/);
  assert.match(section, /\| 4 \| SecAgg\+ \(4 shares, threshold 3\) \| 4\.0 KiB \| 8\.0 KiB \| 500 ms \| 1\.00 ms \| – \| – \| 250 ms \| 3000 ms \| – \| – \| – \| 500 ms \| 88\.00 % \|/);
  assert.match(section, /\| 8 \| SecAgg\+ .*failed: the federation did not finish/);
});

test('the privacy section shows accuracy, the nodes\' epsilon and the server\'s epsilon per mode', () => {
  const priv = {
    name: 'privacy-2099-01-02T00-00-00.json',
    json: {
      date: '2099-01-02T00:00:00.000Z',
      machine: { cpu: 'Test CPU', cores: 2, memoryGiB: 8, commit: 'abcdef0' },
      about: 'about',
      rows: [
        { nodes: 4, mode: 'plain', secagg: null, dp: 'off', finalAccuracy: 0.9, epsilon: null, delta: null, serverEpsilon: null },
        { nodes: 4, mode: 'plain', secagg: null, dp: 'client-clip', finalAccuracy: 0.89, epsilon: null, delta: null, serverEpsilon: 123456789 },
        { nodes: 4, mode: 'secagg+', secagg: { shares: 4, threshold: 3 }, dp: 'distributed:0.3,1,1e-5', finalAccuracy: 0.2, epsilon: 32.349, delta: 1e-5, serverEpsilon: null },
        { nodes: 4, mode: 'plain', dp: 'local:8,1e-5,1', error: 'the federation did not finish' },
      ],
    },
  };
  const doc = renderBenchmarksDoc([...files, priv], provenance);
  const section = doc.slice(doc.indexOf('## Federated learning: accuracy and privacy'));
  assert.match(section, /\| 4 \| plain \| `off` \| 90\.00 % \| – \| – \|/);
  assert.match(section, /\| 4 \| plain \| `client-clip` \| 89\.00 % \| – \| 1\.2e\+8 \|/);
  assert.match(section, /\| 4 \| SecAgg\+ \(4 shares, threshold 3\) \| `distributed:0\.3,1,1e-5` \| 20\.00 % \| 32\.35 \(0\.00001\) \| – \|/);
  assert.match(section, /`local:8,1e-5,1` \| failed: the federation did not finish/);
});

test('a run with browser tabs gets its own section beside the native one, naming each node', () => {
  const row = (mode, acc) => ({ nodes: 4, mode, secagg: mode === 'plain' ? null : { shares: 4, threshold: 3 }, bytesUpPerNodeRound: 1024, bytesDownPerNodeRound: 1024, clientSeconds: { train: 1 }, serverRoundSeconds: 2, serverStageSeconds: {}, finalAccuracy: acc, nodeKinds: ['native', 'tab:webgpu', 'tab:webgl', 'tab:cpu'] });
  const mk = (name, rows) => ({ name, json: { date: '2099-01-03T00:00:00.000Z', machine: { cpu: 'Test CPU', cores: 2, memoryGiB: 8, commit: 'abcdef0' }, about: 'about', rows } });
  const native = mk('federated-2099-01-02T00-00-00.json', [{ ...row('plain', 0.9), nodeKinds: ['native', 'native', 'native', 'native'] }]);
  const tabs = mk('federated-tabs-2099-01-03T00-00-00.json', [row('plain', 0.955), row('secagg+', 0.956)]);
  const doc = renderBenchmarksDoc([...files, native, tabs], provenance);
  assert.match(doc, /## Federated learning: SecAgg\+ against plain FedAvg, per round[^\n]*\n\nRun: [^\n]*federated-2099-01-02/);
  const section = doc.slice(doc.indexOf('## Federated learning with browser tabs'));
  assert.match(section, /federated-tabs-2099-01-03T00-00-00\.json/);
  assert.match(section, /Nodes: a native node, a webgpu tab, a webgl tab, a cpu tab\./);
  assert.match(section, /\| 4 \| SecAgg\+ \(4 shares, threshold 3\) .*\| 95\.60 % \|/);
});

test('a run of the transformer models alone (inference-transformers-*) has a section of its own; the inference section keeps its latest full run', () => {
  assert.equal(kindOf('inference-transformers-2099-01-03T00-00-00.json'), 'inference-transformers');
  assert.equal(kindOf('inference-2099-01-03T00-00-00.json'), 'inference');
  const run = {
    name: 'inference-transformers-2099-01-03T00-00-00.json',
    json: {
      date: '2099-01-03T00:00:00.000Z',
      settings: { rounds: 3, chunkMs: 300, maxChunkRuns: 5, warmupMs: 300 },
      machine: { cpu: 'Test CPU', cores: 2, commit: 'abcdef0' },
      ort: 'onnxruntime-web 1.30.0',
      browser: 'Chromium 1',
      models: [{ name: 'dec', group: 'transformer', input: 'input_ids', shape: [1, 1], generate: { promptLength: 4, newTokens: 8 } }],
      runs: [
        { lib: 'pixelgrad', backend: 'cpu', model: 'dec', firstRunMs: 1, medianMs: 100, runs: 3, outputHead: [1], tokens: [1, 2] },
        { lib: 'ort', backend: 'wasm', model: 'dec', firstRunMs: 1, medianMs: 50, runs: 3, outputHead: [1], tokens: [1, 2] },
      ],
    },
  };
  const before = renderBenchmarksDoc(files, provenance);
  const doc = renderBenchmarksDoc([...files, run], provenance);
  const section = doc.slice(doc.indexOf('## Transformer exports in the browser'));
  assert.match(section, /\| dec \| cpu \/ wasm \| 1\.00 \| 100 \(80\.0 tok\/s\) \| 1\.00 \| 50\.0 \(160 tok\/s\) \| 0\.50× \| 0\.0e\+0, same tokens \|/);
  const inference = (d) => {
    const at = d.indexOf('## Inference in the browser');
    return d.slice(at, d.indexOf('\n## ', at + 1));
  };
  assert.equal(inference(doc), inference(before));
});
