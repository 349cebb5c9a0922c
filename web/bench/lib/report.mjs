// Turns one run's JSON into its Markdown section of docs/benchmarks.md (lib/benchmarks-doc.mjs),
// with the pixelgrad / TF.js ratio and the target verdict for every pair. Node only.

import { trainWorkloads, matmulWorkloads, workloadNames } from './workloads.mjs';

export const START = '<!-- browser-bench:start -->';
export const END = '<!-- browser-bench:end -->';

/** The comparisons, with the throughput target each must meet (pixelgrad / TF.js). */
export const pairTargets = [
  { label: 'webgpu / webgpu', pixelgrad: 'webgpu', tfjs: 'webgpu', target: 2 },
  { label: 'webgl / webgl', pixelgrad: 'webgl', tfjs: 'webgl', target: 2 },
  { label: 'cpu / wasm, 1 thread', pixelgrad: 'cpu', tfjs: 'wasm', target: 1.5 },
  { label: 'cpu / wasm, all threads', pixelgrad: 'cpu-mt', tfjs: 'wasm-mt', target: 1.5 },
];
/** First-step latency target: pixelgrad's at most this fraction of TF.js's. */
export const FIRST_STEP_TARGET = 0.5;

/** 3 significant digits, thousands grouped. */
export function fmt(x) {
  if (x == null || !Number.isFinite(x)) return 'n/a';
  if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString('en-US');
  return Number(x.toPrecision(3)).toString();
}

function ms(x) {
  if (x == null || !Number.isFinite(x)) return 'n/a';
  return x >= 1000 ? `${(x / 1000).toPrecision(3)} s` : `${Math.round(x)} ms`;
}

function bytes(m) {
  if (!m || m.bytes == null) return 'n/a';
  const b = m.bytes;
  return b >= 2 ** 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : `${(b / 1024).toFixed(0)} KiB`;
}

function find(runs, lib, backend, workload) {
  return runs.find((r) => r.lib === lib && r.backend === backend && r.workload === workload);
}

/** Ratio and verdict for one pair and workload; null when either side has no number. */
export function compare(runs, pair, workload) {
  const p = find(runs, 'pixelgrad', pair.pixelgrad, workload);
  const t = find(runs, 'tfjs', pair.tfjs, workload);
  const ok = (r) => r && !r.error && Number.isFinite(r.value);
  const speed = ok(p) && ok(t) && t.value > 0 ? p.value / t.value : null;
  const first = ok(p) && ok(t) && t.firstStepMs > 0 ? p.firstStepMs / t.firstStepMs : null;
  return {
    p,
    t,
    speed,
    speedMet: speed == null ? null : speed >= pair.target,
    first,
    firstMet: first == null ? null : first <= FIRST_STEP_TARGET,
  };
}

const verdict = (met) => (met == null ? 'n/a' : met ? 'met' : 'missed');
const esc = (t) => t.replace(/\|/g, '\\|');
function cell(r) {
  if (!r) return 'not run';
  if (r.error?.startsWith('unsupported: ')) return `n/a (${esc(r.error.slice(13))})`;
  if (r.error) return `failed: ${esc(r.error.slice(0, 160))}`;
  return fmt(r.value);
}

/** One line per pair: the first-step losses (equal when the initial weights are). */
function lossCheck(runs, w) {
  const parts = [];
  for (const p of pairTargets) {
    const a = find(runs, 'pixelgrad', p.pixelgrad, w);
    const b = find(runs, 'tfjs', p.tfjs, w);
    if (a?.firstLoss == null && b?.firstLoss == null) continue;
    const f = (x) => (x == null ? 'n/a' : x.toPrecision(6));
    parts.push(`${p.label} ${f(a?.firstLoss)} / ${f(b?.firstLoss)}${a?.sameWeights && a.sameWeights !== 'yes' ? ` (pixelgrad weights not shared: ${a.sameWeights})` : ''}`);
  }
  return parts.length ? [``, `First-step loss, pixelgrad / TF.js (same initial weights and data, so these should agree): ${parts.join('; ')}.`] : [];
}

function workloadTitle(w) {
  if (trainWorkloads[w]) return trainWorkloads[w].title;
  const n = matmulWorkloads[w];
  return `matmul ${n}x${n} times ${n}x${n} as a chain c ← c·B (each product read by the next), inputs resident on the device, one final readback (GFLOP/s; the steps/s target applied to GFLOP/s)`;
}

function backendsLine(runs) {
  const seen = new Map();
  for (const r of runs) {
    const k = `${r.lib === 'tfjs' ? 'TF.js' : 'pixelgrad'} ${r.backend}`;
    if (!seen.has(k) && (r.adapter || r.library)) seen.set(k, r.adapter ? `${k}: ${r.adapter}` : k);
  }
  return [...seen.values()].join('; ');
}

/** Library start-up per (library, backend): loading the code and starting the backend. */
function initLine(runs) {
  const seen = new Map();
  for (const r of runs) {
    const k = `${r.lib === 'tfjs' ? 'TF.js' : 'pixelgrad'} ${r.backend}`;
    if (!seen.has(k) && Number.isFinite(r.initMs)) seen.set(k, `${k} ${ms(r.initMs)}`);
  }
  return seen.size ? `Start-up (load the library, start the backend; not in the first step): ${[...seen.values()].join(', ')}.` : '';
}

function nativeSection(native) {
  if (!native) return [];
  if (native.error) return ['', `Native side: not measured (${native.error}).`];
  const names = (native.backends ?? []).map((b) => b.backend);
  const lines = [
    '',
    '### Native (`pixelgrad bench --json-out`, same machine, just before the browser run)',
    '',
    "The CLI's presets (its mlp is 784-256-10 with Adam, its cnn has 16/32 filters) and the browser",
    "workloads above run natively (the rows named after them, plain SGD); compare within this table.",
    `Devices: ${(native.backends ?? []).map((b) => `${b.backend} = ${b.name}`).join('; ')}.`,
    '',
    `| workload | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
  ];
  for (const row of native.rows ?? []) {
    lines.push(`| ${row.workload} | ${names.map((n) => fmt(row.values?.[n])).join(' | ')} |`);
  }
  if ((native.passes_per_step ?? []).length) {
    lines.push('', 'Passes (GPU launches; CPU kernels) of one training step replayed from its step plan:', '');
    lines.push(`| workload, optimizer | ${names.join(' | ')} |`, `| --- | ${names.map(() => '---').join(' | ')} |`);
    for (const p of native.passes_per_step) {
      lines.push(`| ${p.workload}, ${p.optimizer} | ${names.map((n) => p.values?.[n] ?? 'n/a').join(' | ')} |`);
    }
  }
  return lines;
}

/** The Markdown section (markers included) for one run's result object. */
export function renderMarkdown(res, jsonPath) {
  // pairs this run measured (runs from before a pair existed have none of its rows)
  const shown = pairTargets.filter((p) => res.runs.some((r) => (r.lib === 'pixelgrad' && r.backend === p.pixelgrad) || (r.lib === 'tfjs' && r.backend === p.tfjs)));
  const s = res.settings;
  const workloads = workloadNames.filter((w) => res.runs.some((r) => r.workload === w));
  const L = [
    START,
    '## Browser: `cargo xtask bench` (pixelgrad vs TensorFlow.js 4.22.0)',
    '',
    `From one run (\`${jsonPath}\`).`,
    `Run: ${res.date.slice(0, 16).replace('T', ' ')} UTC, ${res.machine.cpu} (${res.machine.cores} cores, load average ${res.machine.loadAverageAtStart.join(' / ')} at start),`,
    `${res.browser} headless with WebGPU and WebGL2 on SwiftShader (CPU emulation, no GPU), commit ${res.machine.commit ?? 'n/a'}.`,
    `${s.mode} run: per measurement, first step, ${s.warmupMs / 1000} s warm-up, then ${s.repeats} repeats of ~${s.repeatMs / 1000} s; the median is shown. Total ${res.durationS} s.`,
    `Backends: ${backendsLine(res.runs)}.`,
    initLine(res.runs),
    '',
    'Same model definitions, data and initial weights (seeded Glorot uniform) on both sides where the',
    "library lets weights be set; plain SGD. TF.js trains with `optimizer.minimize` on device-resident",
    'batches, pixelgrad with `model.fit`; both read the loss back every 50 steps and at the end.',
    'First step = build the model + set the initial weights (TF.js `setWeights`; pixelgrad `loadModel`',
    'from IndexedDB, its only way in) + upload data + one step + readback, shader compiles included.',
    '',
    `**Targets** (pixelgrad / TF.js): ≥ 2× steps/s on webgpu and webgl, ≥ 1.5× tfjs-wasm on the CPU;`,
    `first step ≤ ${FIRST_STEP_TARGET}× TF.js's.`,
    '',
    '### Summary: ratio pixelgrad / TF.js, verdict',
    '',
    `| workload | ${shown.map((p) => `${p.label} speed (≥ ${p.target}×)`).join(' | ')} | ${shown.map((p) => `${p.label} first step (≤ ${FIRST_STEP_TARGET}×)`).join(' | ')} |`,
    `| --- | ${shown.map(() => '---').join(' | ')} | ${shown.map(() => '---').join(' | ')} |`,
  ];
  for (const w of workloads) {
    const c = shown.map((p) => compare(res.runs, p, w));
    const sp = c.map((x) => (x.speed == null ? 'n/a' : `${fmt(x.speed)}× ${verdict(x.speedMet)}`));
    const fs1 = c.map((x) => (x.first == null ? 'n/a' : `${fmt(x.first)}× ${verdict(x.firstMet)}`));
    L.push(`| ${w} | ${sp.join(' | ')} | ${fs1.join(' | ')} |`);
  }
  for (const w of workloads) {
    const unit = matmulWorkloads[w] ? 'GFLOP/s' : 'steps/s';
    L.push(
      '',
      `### ${w}`,
      '',
      workloadTitle(w),
      '',
      `| pixelgrad / TF.js | pixelgrad ${unit} | TF.js ${unit} | ratio | target | pixelgrad first step | TF.js first step | ratio | ≤ ${FIRST_STEP_TARGET}× | pixelgrad memory | TF.js memory |`,
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const p of shown) {
      const c = compare(res.runs, p, w);
      L.push(
        `| ${p.label} | ${cell(c.p)} | ${cell(c.t)} | ${c.speed == null ? 'n/a' : fmt(c.speed) + '×'} | ≥ ${p.target}×: ${verdict(c.speedMet)} | ` +
          `${c.p && !c.p.error ? ms(c.p.firstStepMs) : 'n/a'} | ${c.t && !c.t.error ? ms(c.t.firstStepMs) : 'n/a'} | ${c.first == null ? 'n/a' : fmt(c.first) + '×'} | ${verdict(c.firstMet)} | ` +
          `${bytes(c.p?.memory)} | ${bytes(c.t?.memory)} |`,
      );
    }
    const tuned = compare(res.runs, { pixelgrad: 'webgpu', tfjs: 'webgpu-packed', target: 2 }, w);
    if (tuned.t) {
      L.push(
        `| webgpu / TF.js webgpu with packed matmul forced (reference) | ${cell(tuned.p)} | ${cell(tuned.t)} | ${tuned.speed == null ? 'n/a' : fmt(tuned.speed) + '×'} | reference | ` +
          `${tuned.p && !tuned.p.error ? ms(tuned.p.firstStepMs) : 'n/a'} | ${tuned.t.error ? 'n/a' : ms(tuned.t.firstStepMs)} | ${tuned.first == null ? 'n/a' : fmt(tuned.first) + '×'} | reference | ${bytes(tuned.p?.memory)} | ${bytes(tuned.t?.memory)} |`,
      );
    }
    L.push(...lossCheck(res.runs, w));
  }
  L.push(
    '',
    'Memory: what each library reports after the timed repeats (TF.js: `tf.memory()`, GPU bytes on',
    'webgpu/webgl, heap tensor bytes on wasm; pixelgrad: `rt.memory().bytesInUse`, bytes held by live',
    'tensors and the backend\'s buffer/texture pools). pixelgrad\'s matmul reads the whole product back',
    'at the end of a repeat, TF.js one element.',
  );
  L.push(...nativeSection(res.native));
  L.push(END);
  return L.join('\n') + '\n';
}
