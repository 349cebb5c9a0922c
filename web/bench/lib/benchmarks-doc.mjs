// docs/benchmarks.md from the committed result files: one section per benchmark, each from
// its latest run, with the date, commit and machine of that run, then a list of the earlier
// runs. Pure (no file system, no clock): the same files give the same text, byte for byte.
//
// Result files (web/bench/results/) by name:
//   <date>.json              `cargo xtask bench`: training vs TF.js in Chromium, plus the native bench
//   inference-<date>.json    `cargo xtask bench --inference`: ONNX models vs ONNX Runtime Web
//   inference-transformers-<date>.json  the same run on the transformer models alone (`--only`
//                            them: issue 42's encoder and decoders), a section of its own
//   preprocess-<date>.json   `node web/bench/preprocess.mjs`: capture + preprocess frames/s
//   camera-<date>.json       `node web/bench/camera.mjs`: the camera demo end to end
//   quality-<date>.json      `cargo xtask bench-quality`: test accuracy per workload and backend
//   federated-<date>.json    `cargo xtask bench-federated`: SecAgg+ against plain FedAvg per round
//   federated-tabs-<date>.json  the same with browser tabs in each federation (`--browsers K`)
//   privacy-<date>.json      `cargo xtask bench-federated --privacy`: accuracy and epsilon per privacy mode
// Files written before the runners recorded their date, commit and machine get them from
// provenance.json (taken from the git history; it says so).
import { renderMarkdown as renderTraining, START as TRAINING_START, END as TRAINING_END } from './report.mjs';
import { renderMarkdown as renderInference, START as INFERENCE_START, END as INFERENCE_END } from './inference-report.mjs';

/** The benchmark a result file belongs to, from its name; null for files that are not results. */
export function kindOf(name) {
  if (!name.endsWith('.json') || name === 'provenance.json') return null;
  for (const k of ['inference-transformers', 'inference', 'preprocess', 'camera', 'quality', 'federated-tabs', 'federated', 'privacy']) if (name.startsWith(`${k}-`)) return k;
  return /^\d{4}-\d{2}-\d{2}T/.test(name) ? 'training' : null;
}

/**
 * Date, commit and machine of a result, from the file or its provenance entry:
 * `{ date: 'YYYY-MM-DD HH:MM UTC' | 'YYYY-MM-DD', commit, machine, run, label, source }`.
 */
export function metaOf(file, provenance = {}) {
  const j = file.json;
  const p = provenance[file.name];
  if (j.date && j.machine) {
    const m = j.machine;
    return {
      date: `${j.date.slice(0, 16).replace('T', ' ')} UTC`,
      commit: m.commit ?? 'not recorded',
      machine: `${m.cpu}, ${m.cores} cores${m.memoryGiB ? `, ${m.memoryGiB} GiB` : ''}`,
      run: j.date,
      label: null,
      source: 'file',
    };
  }
  if (!p) throw new Error(`${file.name}: no date and machine in the file and no entry in provenance.json`);
  return { date: p.date, commit: p.commit, machine: p.machine, run: p.run, label: p.label ?? null, source: 'provenance' };
}

const f1 = (x) => (x == null || !Number.isFinite(x) ? 'n/a' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
const ratio = (a, b) => (a && b ? `${(a / b).toFixed(2)}×` : 'n/a');
const stripMarkers = (text, start, end) =>
  text
    .split('\n')
    .filter((l) => l !== start && l !== end)
    .join('\n')
    .trimEnd();
const provenanceNote = (meta) =>
  meta.source === 'provenance' ? ' The file predates recorded metadata: its date, commit and machine come from `web/bench/results/provenance.json`.' : '';

/** Groups the files of one benchmark into runs (rounds of one run share `meta.run`), oldest first. */
function runsOf(files, provenance) {
  const byRun = new Map();
  for (const f of files) {
    const meta = metaOf(f, provenance);
    const key = `${meta.run}\u0000${meta.label ?? ''}`;
    if (!byRun.has(key)) byRun.set(key, { meta, files: [] });
    byRun.get(key).files.push(f);
  }
  const runs = [...byRun.values()];
  for (const r of runs) r.files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // A labelled run ('before' a change) is never the current one.
  return runs.sort((a, b) => (a.meta.label ? 0 : 1) - (b.meta.label ? 0 : 1) || (a.meta.run < b.meta.run ? -1 : a.meta.run > b.meta.run ? 1 : 0));
}

function trainingSection(run) {
  const f = run.files[0];
  const body = stripMarkers(renderTraining(f.json, `web/bench/results/${f.name}`), TRAINING_START, TRAINING_END);
  return body.replace(/^## Browser: `cargo xtask bench` \(pixelgrad vs TensorFlow\.js 4\.22\.0\)$/m, '## Training in the browser: pixelgrad vs TensorFlow.js 4.22.0 (`cargo xtask bench`)');
}

function inferenceSection(run) {
  const f = run.files[0];
  return stripMarkers(renderInference(f.json, `web/bench/results/${f.name}`), INFERENCE_START, INFERENCE_END);
}

/** The transformer models' run (issue 42): the inference table, under a heading of its own. */
function transformersSection(run) {
  return inferenceSection(run).replace(
    /^## Inference in the browser: pixelgrad vs ONNX Runtime Web \(`cargo xtask bench --inference`\)$/m,
    '## Transformer exports in the browser: pixelgrad vs ONNX Runtime Web (`cargo xtask bench --inference --only` the transformer models)',
  );
}

function preprocessSection(run) {
  const { meta, files } = run;
  const rounds = files.map((f) => f.json);
  const L = [
    '## Capture + preprocess in the browser: `pg.fromPixels` vs TF.js (`node web/bench/preprocess.mjs`)',
    '',
    `Run: ${meta.date}, commit ${meta.commit}, ${meta.machine}, ${rounds[0].chromium} headless (SwiftShader for WebGPU and WebGL); ` +
      `${rounds.length === 1 ? 'one round' : `${rounds.length} rounds, shown as a / b`} (${files.map((f) => `\`web/bench/results/${f.name}\``).join(', ')}).${provenanceNote(meta)}`,
    `Frames/s of a 640x480 fake-camera frame made into a 224x224 normalised NCHW model input on the device: ${rounds[0].frames} frames back to back after`,
    '10 warm-up frames, the last one read back. camera: from the `<video>`; camera async: through each library\'s',
    '`fromPixelsAsync`; canvas: from a canvas holding one frame. TF.js: `tf.browser.fromPixels` + `tf.image.resizeBilinear`',
    '(half-pixel centres) + normalisation + transpose. pixelgrad twice: its default (antialiased when shrinking more than',
    "2×) and plain bilinear (`antialias: 'never'`), which is what TF.js computes.",
    '',
    '| backend | library | camera | camera async | canvas |',
    '| --- | --- | --- | --- | --- |',
  ];
  const keys = [];
  for (const r of rounds[0].rows) keys.push([r.backend, r.lib]);
  const cell = (b, lib, k) =>
    rounds
      .map((j) => {
        const r = j.rows.find((x) => x.backend === b && x.lib === lib);
        return !r ? 'n/a' : r.error ? 'failed' : f1(r[k]);
      })
      .join(' / ');
  for (const [b, lib] of keys) L.push(`| ${b} | ${lib} | ${cell(b, lib, 'camera')} | ${cell(b, lib, 'cameraAsync')} | ${cell(b, lib, 'canvas')} |`);
  L.push('', 'Ratio pixelgrad (plain bilinear) / TF.js, camera frames/s, per round:', '');
  for (const b of [...new Set(keys.map(([b]) => b))]) {
    const rs = rounds.map((j) => {
      const p = j.rows.find((x) => x.backend === b && x.lib === 'pixelgrad (antialias never)');
      const t = j.rows.find((x) => x.backend === b && x.lib === 'tfjs');
      return ratio(p && !p.error && p.camera, t && !t.error && t.camera);
    });
    L.push(`- ${b}: ${rs.join(' / ')}`);
  }
  return L.join('\n');
}

function cameraSection(run) {
  const { meta, files } = run;
  const j = files[0].json;
  const L = [
    '## The camera demo end to end (`node web/bench/camera.mjs`)',
    '',
    `Run: ${meta.date}, commit ${meta.commit}, ${meta.machine}, ${j.chromium} headless; \`web/bench/results/${files[0].name}\`.${provenanceNote(meta)}`,
    `web/demo/camera.html classifying a fake camera for ${j.seconds} s per backend and model: frames/s of the whole loop`,
    '(capture + preprocess, inference, post-processing + read back), and the mean time of each stage.',
    '',
    '| backend | model | input | frames/s | capture + preprocess | inference | post-process + read |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of j.rows) {
    if (r.error) L.push(`| ${r.backend} | ${r.model} | n/a | failed: ${r.error.split('\n')[0].slice(0, 80)} | | | |`);
    else L.push(`| ${r.backend} | ${r.model} | ${r.input.join('x')} | ${f1(r.fps)} | ${f1(r.preprocessMs)} ms | ${f1(r.inferenceMs)} ms | ${f1(r.readMs)} ms |`);
  }
  return L.join('\n');
}

function qualitySection(run) {
  if (!run) {
    return [
      '## Model quality',
      '',
      'No accuracy results are committed yet: `cargo xtask bench-quality` writes them (`web/bench/results/quality-<date>.json`).',
    ].join('\n');
  }
  const { meta, files } = run;
  const j = files[0].json;
  const L = [
    '## Model quality: test accuracy per workload and backend (`cargo xtask bench-quality`)',
    '',
    `Run: ${meta.date}, commit ${meta.commit}, ${meta.machine}; \`web/bench/results/${files[0].name}\`.`,
    j.about ?? '',
    '',
    `| workload | ${j.backends.map((b) => (!b.device || b.device === b.name ? b.name : b.device.startsWith(`${b.name} `) ? b.device : `${b.name}: ${b.device}`)).join(' | ')} |`,
    `| --- | ${j.backends.map(() => '---').join(' | ')} |`,
  ];
  for (const w of j.workloads) {
    const cells = j.backends.map((b) => {
      const r = j.rows.find((x) => x.workload === w.name && x.backend === b.name);
      if (!r) return 'not run';
      if (r.error) return `failed: ${r.error.split('\n')[0].slice(0, 60)}`;
      return `${(100 * r.testAccuracy).toFixed(2)} % (loss ${r.testLoss.toFixed(4)}, ${f1(r.seconds)} s)`;
    });
    L.push(`| ${w.name}: ${w.about} | ${cells.join(' | ')} |`);
  }
  return L.join('\n');
}

function federatedSection(run, title = 'Federated learning: SecAgg+ against plain FedAvg, per round (`cargo xtask bench-federated`)') {
  const { meta, files } = run;
  const j = files[0].json;
  const kinds = j.rows.find((r) => r.nodeKinds)?.nodeKinds;
  const kib = (x) => (x == null ? 'n/a' : `${(x / 1024).toFixed(1)} KiB`);
  const ms = (x) => (x == null ? 'n/a' : `${(1000 * x).toFixed(x < 0.01 ? 2 : 0)} ms`);
  const stages = ['setup', 'share_keys', 'collect_masked_vectors', 'unmask'];
  const L = [
    `## ${title}`,
    '',
    `Run: ${meta.date}, commit ${meta.commit}, ${meta.machine}; \`web/bench/results/${files[0].name}\`.`,
    j.about ?? '',
    ...(kinds && kinds.some((k) => k.startsWith('tab:'))
      ? [`Nodes: ${kinds.map((k) => (k.startsWith('tab:') ? `a ${k.slice(4)} tab` : 'a native node')).join(', ')}. Bytes and client times below are the native nodes' own counts (the tabs exchange the same messages but do not report them).`]
      : []),
    'Bytes are the Fleet API bodies a node sends and receives per round (mean over nodes). Client time is the',
    "node's own compute: local training, then each SecAgg+ stage it answers (mean over nodes and rounds).",
    "Server time is the round's wall time in the ServerApp and, under SecAgg+, each stage of",
    "`SecAggPlusWorkflow` (sending, waiting for every node's reply, and the server's own work).",
    '',
    '| nodes | mode | up / node | down / node | client: train | client: setup | share keys | mask | unmask | server: round | setup | share keys | masked vectors | unmask | final acc. |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of j.rows) {
    const mode = r.mode === 'plain' ? 'plain' : r.secagg ? `SecAgg+ (${r.secagg.shares} shares, threshold ${r.secagg.threshold})` : 'SecAgg+';
    if (r.error) {
      L.push(`| ${r.nodes} | ${mode} | failed: ${r.error.split('\n')[0].slice(0, 80)} |${' |'.repeat(13)}`);
      continue;
    }
    const c = r.clientSeconds || {};
    const s = r.serverStageSeconds || {};
    L.push(
      `| ${r.nodes} | ${mode} | ${kib(r.bytesUpPerNodeRound)} | ${kib(r.bytesDownPerNodeRound)} | ${ms(c.train)} | ` +
        `${stages.map((k) => (c[k] == null ? '–' : ms(c[k]))).join(' | ')} | ${ms(r.serverRoundSeconds)} | ` +
        `${stages.map((k) => (s[k] == null ? '–' : ms(s[k]))).join(' | ')} | ${r.finalAccuracy == null ? 'n/a' : (100 * r.finalAccuracy).toFixed(2) + ' %'} |`,
    );
  }
  return L.join('\n');
}

function privacySection(run) {
  const { meta, files } = run;
  const j = files[0].json;
  const eps = (x) => (x == null ? '–' : x >= 1e4 ? x.toExponential(1) : x.toFixed(2));
  const L = [
    '## Federated learning: accuracy and privacy budget per mode (`cargo xtask bench-federated --privacy`)',
    '',
    `Run: ${meta.date}, commit ${meta.commit}, ${meta.machine}; \`web/bench/results/${files[0].name}\`.`,
    j.about ?? '',
    "ε per node is the largest cumulative ε any node reported after the last round, at the mode's δ",
    '(nodes that add no noise report none). For client-side clipping the nodes add nothing: the',
    "server's ε is what its own noise would give (one Gaussian release per round, every node",
    'weighted equally), which a node cannot check.',
    '',
    '| nodes | mode | `--dp` | final acc. | ε per node (δ) | ε of the server\'s noise (δ 1e-5) |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of j.rows) {
    const mode = r.mode === 'plain' ? 'plain' : r.secagg ? `SecAgg+ (${r.secagg.shares} shares, threshold ${r.secagg.threshold})` : 'SecAgg+';
    if (r.error) {
      L.push(`| ${r.nodes} | ${mode} | \`${r.dp}\` | failed: ${r.error.split('\n')[0].slice(0, 80)} | | |`);
      continue;
    }
    const node = r.epsilon == null ? '–' : `${eps(r.epsilon)} (${r.delta})`;
    L.push(`| ${r.nodes} | ${mode} | \`${r.dp}\` | ${r.finalAccuracy == null ? 'n/a' : (100 * r.finalAccuracy).toFixed(2) + ' %'} | ${node} | ${eps(r.serverEpsilon)} |`);
  }
  return L.join('\n');
}

const SECTIONS = [
  ['training', trainingSection, '`cargo xtask bench`'],
  ['inference', inferenceSection, '`cargo xtask bench --inference`'],
  ['inference-transformers', transformersSection, '`cargo xtask bench --inference --only bert-h256-l4-s128,...`'],
  ['preprocess', preprocessSection, '`node web/bench/preprocess.mjs --json FILE`'],
  ['camera', cameraSection, '`node web/bench/camera.mjs --json FILE`'],
];

/**
 * The whole of docs/benchmarks.md. `files`: `[{ name, json }]` of web/bench/results/ in any
 * order; `provenance`: the `files` map of results/provenance.json.
 */
export function renderBenchmarksDoc(files, provenance = {}) {
  const by = {};
  for (const f of files) {
    const k = kindOf(f.name);
    if (k) (by[k] ||= []).push(f);
  }
  const runs = {};
  for (const [k, fs] of Object.entries(by)) runs[k] = runsOf(fs, provenance);
  const current = (k) => (runs[k] ? runs[k][runs[k].length - 1] : null);

  const out = [
    '# Benchmarks',
    '',
    '<!-- Generated by `cargo xtask bench-report` from web/bench/results/*.json (web/bench/lib/benchmarks-doc.mjs); regenerate rather than edit. -->',
    '',
    'The current numbers: one section per benchmark, each from its latest committed run, with the',
    'date, commit and machine of that run. Benchmarks are never tests: nothing here is asserted.',
    'Every run so far is on a 2-core development machine without a GPU, where WebGPU and WebGL run on',
    'CPU emulations (SwiftShader in Chromium; lavapipe and llvmpipe natively): read the ratios between',
    'libraries measured side by side in one run, not the absolute speeds. How to run each benchmark:',
    '[web/bench/README.md](../web/bench/README.md). The investigations behind these numbers (what was',
    'tried, measured and why) are dated notes in [bench/notes/](../bench/notes/).',
    '',
  ];
  for (const [k, render, cmd] of SECTIONS) {
    const run = current(k);
    out.push(run ? render(run) : `## ${k}\n\nNo committed results (${cmd} writes them).`, '');
  }
  out.push(qualitySection(current('quality')), '');
  if (current('federated')) out.push(federatedSection(current('federated')), '');
  if (current('federated-tabs')) {
    out.push(federatedSection(current('federated-tabs'), 'Federated learning with browser tabs: SecAgg+ against plain FedAvg, per round (`cargo xtask bench-federated --browsers K`)'), '');
  }
  if (current('privacy')) out.push(privacySection(current('privacy')), '');

  const earlier = [];
  for (const [k, , cmd] of [...SECTIONS, ['quality', null, '`cargo xtask bench-quality`'], ['federated', null, '`cargo xtask bench-federated`'], ['federated-tabs', null, '`cargo xtask bench-federated --browsers K`'], ['privacy', null, '`cargo xtask bench-federated --privacy`']]) {
    for (const r of (runs[k] || []).slice(0, -1)) {
      for (const f of r.files) earlier.push(`| ${cmd} | \`web/bench/results/${f.name}\` | ${r.meta.date} | ${r.meta.commit}${r.meta.label ? ` (${r.meta.label})` : ''} |`);
    }
  }
  if (earlier.length) {
    out.push(
      '## Earlier runs',
      '',
      'Superseded by the sections above; kept for comparison (the notes in bench/notes/ discuss them).',
      '',
      '| benchmark | file | date | commit |',
      '| --- | --- | --- | --- |',
      ...earlier,
      '',
    );
  }
  return out.join('\n');
}
