// Pure helpers of the inference benchmark (web/bench/inference.mjs): output agreement and the
// docs/benchmarks.md inference section. No browser, no file system beyond what callers pass.

export const START = '<!-- inference-bench:start -->';
export const END = '<!-- inference-bench:end -->';

/** Backend pairs compared: pixelgrad's backend and the ONNX Runtime Web execution provider. */
export const pairs = [
  { pixelgrad: 'webgpu', ort: 'webgpu' },
  { pixelgrad: 'webgl', ort: 'webgl' },
  { pixelgrad: 'cpu', ort: 'wasm' },
  { pixelgrad: 'cpu-mt', ort: 'wasm-mt' },
];

/** max |a - b| / max |b| (b the reference); Infinity when the lengths differ or a value is not finite. */
export function maxRelDiff(a, b) {
  if (!a || !b || a.length !== b.length || a.length === 0) return Infinity;
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!Number.isFinite(d)) return Infinity;
    num = Math.max(num, d);
    den = Math.max(den, Math.abs(b[i]));
  }
  return den === 0 ? num : num / den;
}

/** Index of the largest value (the class a classifier picks). */
export function argmax(xs) {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
  return best;
}

const fmt = (ms) => (ms == null ? '—' : ms >= 100 ? ms.toFixed(0) : ms.toPrecision(3));

/** Tokens per second of a decoder row: the new tokens of one generation over its median time. */
export function tokensPerSecond(model, run) {
  if (!model.generate || !run || run.error || !run.medianMs) return null;
  return (model.generate.newTokens * 1000) / run.medianMs;
}

/**
 * The rows of the table: per model and backend pair, both libraries' first-run and median
 * latency, the speed ratio (ORT's median / pixelgrad's: above 1, pixelgrad is faster) and
 * pixelgrad's output error against ORT's wasm output (the reference every row is compared to).
 */
export function rows(result) {
  const find = (lib, backend, model) => result.runs.find((r) => r.lib === lib && r.backend === backend && r.model === model);
  // A committed result keeps the first 8 values of each output (`outputHead`, inference.mjs),
  // the live run all of them: the error is over what there is.
  const values = (r) => r.output ?? r.outputHead;
  const out = [];
  for (const m of result.models) {
    const ref = find('ort', 'wasm', m.name);
    for (const p of pairs) {
      const a = find('pixelgrad', p.pixelgrad, m.name);
      const b = find('ort', p.ort, m.name);
      // a pair the run did not measure (runs from before it existed): no row
      if (!a && !b) continue;
      const ok = (r) => r && !r.error;
      out.push({
        model: m.name,
        pair: `${p.pixelgrad} / ${p.ort}`,
        pixelgrad: a,
        ort: b,
        ratio: ok(a) && ok(b) ? b.medianMs / a.medianMs : null,
        error: ok(a) && ok(ref) ? maxRelDiff(values(a), values(ref)) : null,
        // ORT's own output on this EP against its wasm output: a run that gives wrong numbers
        // (e.g. WebGPU validation errors) is not a timing to compare with
        ortError: ok(b) && ok(ref) && b !== ref ? maxRelDiff(values(b), values(ref)) : null,
        // a decoder (`generate`): whether pixelgrad generated ORT wasm's greedy tokens
        sameTokens: m.generate && ok(a) && ok(ref) && a.tokens && ref.tokens ? a.tokens.join() === ref.tokens.join() : null,
      });
    }
  }
  return out;
}

/** The inference section of docs/benchmarks.md (lib/benchmarks-doc.mjs drops the START and END lines). */
export function renderMarkdown(result, file) {
  const cell = (r, key) => (!r ? 'not run' : r.error ? `failed: ${r.error.slice(0, 80)}` : fmt(r[key]));
  const model = (name) => result.models.find((m) => m.name === name);
  // a decoder's median: one whole generation, and its tokens/s
  const median = (name, r) => {
    const tps = tokensPerSecond(model(name), r);
    return tps == null ? cell(r, 'medianMs') : `${cell(r, 'medianMs')} (${tps.toPrecision(3)} tok/s)`;
  };
  const L = [
    START,
    '## Inference in the browser: pixelgrad vs ONNX Runtime Web (`cargo xtask bench --inference`)',
    '',
    `Run: ${result.date.slice(0, 10)}, ${result.browser}, ${result.machine.cpu} ×${result.machine.cores}` +
      (result.machine.commit ? `, commit ${result.machine.commit}` : '') +
      `; ${result.ort}; raw results in \`${file}\`.`,
    'Batch 1, one headless Chromium session, each library on its own page; latency is inputs in',
    'to the first output read back into JS, ms; "first" includes shader compiles. Both libraries',
    `load the model, warm up alone for ${result.settings.warmupMs ?? 0} ms each (not counted: V8 tiers hot wasm functions up meanwhile), then take turns running ${result.settings.rounds} chunks of at most ${result.settings.maxChunkRuns} runs (about ${result.settings.chunkMs} ms) each,`,
    "each library's page brought to the front for its turn (a background tab runs slower), so the machine's load",
    "drifts alike for both; the median is over all of a row's runs. ratio = ONNX Runtime Web's median / pixelgrad's (above 1: pixelgrad",
    'faster). error = max |pixelgrad − ort wasm| / max |ort wasm| on the first output (its first 8 values where the result file keeps only those; after the slash: ORT\'s own output on that EP, the same way; a large one marks an ORT run that computed wrong numbers, whose time means nothing). ORT\'s',
    'wasm EP and pixelgrad\'s CPU backend run one thread each in the `cpu / wasm` rows and all the machine\'s hardware threads in the `cpu-mt / wasm-mt` rows (runs without those rows predate them). TF.js cannot load ONNX models, so it',
    'has no row. SwiftShader runs WebGPU and WebGL on the CPU here: the ratios say how the',
    'libraries\' passes behave, not how fast a GPU is.',
    '',
    'The `f16` and `int8` rows (issue 14): pixelgrad loads the float file with `{ precision: \'f16\' }`',
    "and ORT onnxruntime's own float16 conversion of it; int8 is one QDQ file (quant_pre_process, then",
    "quantize_static, u8 activations, per-channel i8 weights) for both, so their error is against ORT's",
    "int8 (or fp16) wasm output. weights: pixelgrad's device weight bytes (`m.info.deviceWeightBytes`) /",
    "the size of the model file ORT loaded (it reports no device memory).",
    ...(result.models.some((m) => m.generate)
      ? [
        '',
        'The decoder rows (`generate`, issue 42) time one whole greedy generation: the prompt, then one',
        'token per run with the cache, each run\'s present.N.key/value fed back as past_key_values.N.key/value',
        '(the same loop in the page for both libraries; ORT keeps the cache in GPU buffers on WebGPU); the',
        'median cell adds tokens/s (new tokens over the median generation), the error is on the last',
        "step's logits, and says whether pixelgrad generated ORT wasm's tokens.",
      ]
      : []),
    '',
    '| model | pixelgrad / ort backend | pixelgrad first | pixelgrad median | ort first | ort median | ratio | error | weights (pixelgrad device / ort file) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const kb = (r) => (r && !r.error && r.weightBytes != null ? `${(r.weightBytes / 1024).toFixed(0)} KiB` : '—');
  for (const r of rows(result)) {
    const wrong = r.ortError != null && r.ortError > 0.05;
    const ratio = r.ratio == null ? '—' : wrong ? `(${r.ratio.toFixed(2)}×: ORT output wrong)` : `${r.ratio.toFixed(2)}×`;
    const e = (v) => (v == null ? '—' : v.toExponential(1));
    const tokens = r.sameTokens == null ? '' : r.sameTokens ? ', same tokens' : ', tokens differ';
    const err = (r.ortError == null ? e(r.error) : `${e(r.error)} / ${e(r.ortError)}`) + tokens;
    L.push(
      `| ${r.model} | ${r.pair} | ${cell(r.pixelgrad, 'firstRunMs')} | ${median(r.model, r.pixelgrad)} | ${cell(r.ort, 'firstRunMs')} | ${median(r.model, r.ort)} | ${ratio} | ${err} | ${kb(r.pixelgrad)} / ${kb(r.ort)} |`,
    );
  }
  const about = (m) => m.about || (m.base ? `${m.base} in ${m.form}` : '');
  const input = (m) =>
    m.generate ? `a ${m.generate.promptLength}-token prompt, ${m.generate.newTokens} new tokens`
      : m.inputs ? `inputs ${m.inputs.map((i) => `\`${i.name}\` ${JSON.stringify(i.shape)}`).join(', ')}`
        : `input \`${m.input}\` ${JSON.stringify(m.shape)}`;
  L.push('', ...result.models.map((m) => `- ${m.name}: ${input(m)}; ${about(m)}`));
  L.push(END);
  return L.join('\n') + '\n';
}
