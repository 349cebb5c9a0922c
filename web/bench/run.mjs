// Side-by-side browser benchmark: pixelgrad {webgpu, webgl, cpu, cpu-mt} vs TF.js 4.22.0
// {webgpu, webgl, wasm, wasm-mt} (-mt: all hardware threads on both sides, else one thread),
// every workload, in one headless Chromium session (web/tests/harness.mjs).
// Writes web/bench/results/<date>.json, then regenerates docs/benchmarks.md from every
// committed result (lib/benchmarks-doc.mjs; `cargo xtask bench-report` does only that).
//
//   node web/bench/run.mjs [--quick] [--tfjs-tuned] [--only a,b,...] [--out FILE] [--native-json FILE]
//                          [--markdown FILE | --no-markdown] [--timeout SECONDS]
//
// --tfjs-tuned adds TF.js WebGPU with its packed matmul forced ('webgpu-packed'), a reference
// for how much of TF.js's WebGPU time is its default matmul choice on this adapter.
// --only keeps the (library, backend, workload) runs matching every kind of token given:
// libraries (pixelgrad, tfjs), backends (webgpu, webgl, cpu, wasm; lib:backend also works)
// and workload names (seed-mlp, mnist-mlp, cnn, matmul-256, matmul-512, matmul-1024, matmul).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../tests/harness.mjs';
import { workloadNames } from './lib/workloads.mjs';
import { machine } from './lib/machine.mjs';
import { writeBenchmarksDoc } from './lib/results.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');

/** Backend pairs compared, pixelgrad's first; each pair runs back to back so load drifts alike. */
export const pairs = [
  { pixelgrad: 'webgpu', tfjs: 'webgpu' },
  { pixelgrad: 'webgl', tfjs: 'webgl' },
  { pixelgrad: 'cpu', tfjs: 'wasm' },
  // all hardware threads on both sides (issue 45's fair comparison: 1 thread above, all here)
  { pixelgrad: 'cpu-mt', tfjs: 'wasm-mt' },
];

function parseArgs(argv) {
  const a = { quick: false, tuned: false, only: [], out: null, nativeJson: null, markdown: path.join(repoRoot, 'docs', 'benchmarks.md'), timeout: null };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${v} needs a value`);
      return argv[++i];
    };
    if (v === '--quick') a.quick = true;
    else if (v === '--tfjs-tuned') a.tuned = true;
    else if (v === '--only') a.only.push(...next().split(',').map((s) => s.trim()).filter(Boolean));
    else if (v === '--out') a.out = next();
    else if (v === '--native-json') a.nativeJson = next();
    else if (v === '--markdown') a.markdown = next();
    else if (v === '--no-markdown') a.markdown = null;
    else if (v === '--timeout') a.timeout = Number(next());
    else throw new Error(`unknown argument ${v}`);
  }
  return a;
}

/** The filter --only describes: each token kind given must match. */
function filter(only) {
  const libs = new Set(['pixelgrad', 'tfjs']);
  const backends = new Set(['webgpu', 'webgl', 'cpu', 'wasm', 'cpu-mt', 'wasm-mt', 'webgpu-packed']);
  const want = { lib: [], backend: [], libBackend: [], workload: [] };
  for (const t of only) {
    if (libs.has(t)) want.lib.push(t);
    else if (backends.has(t)) want.backend.push(t);
    else if (t.includes(':')) want.libBackend.push(t);
    else if (workloadNames.some((w) => w === t || w.startsWith(t + '-'))) want.workload.push(t);
    else throw new Error(`--only: unknown token '${t}' (libraries, backends, lib:backend or workloads ${workloadNames.join(', ')})`);
  }
  const any = (list, ok) => list.length === 0 || list.some(ok);
  return {
    pair: (lib, backend) =>
      any(want.lib, (l) => l === lib) && any(want.backend, (b) => b === backend) && any(want.libBackend, (lb) => lb === `${lib}:${backend}`),
    workload: (w) => any(want.workload, (t) => w === t || w.startsWith(t + '-')),
  };
}

/** Runs `fn` but gives up after `ms`, calling `onTimeout` (which closes the page). */
async function withTimeout(ms, what, fn, onTimeout) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Error(`${what}: timed out after ${Math.round(ms / 1000)} s`));
    }, ms);
  });
  try {
    return await Promise.race([fn(), limit]);
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const settings = args.quick
    ? { mode: 'quick', warmupMs: 200, repeatMs: 400, repeats: 3, timeoutS: args.timeout ?? 45 }
    : { mode: 'full', warmupMs: 1000, repeatMs: 2500, repeats: 3, timeoutS: args.timeout ?? 150 };
  const workloads = workloadNames.filter((w) => !(args.quick && w.startsWith('matmul-') && w !== 'matmul-256'));
  const keep = filter(args.only);
  const started = new Date();
  const result = {
    date: started.toISOString(),
    settings,
    machine: machine(repoRoot),
    browser: null,
    runs: [],
    native: null,
  };

  // blob: scripts for TF.js's threaded wasm build only (see web/server/static.mjs)
  const server = await startServer(webRoot, 0, { scriptSources: ['blob:'] });
  const browser = await launchBrowser();
  result.browser = await browserVersion(browser);
  console.log(`${result.browser}; ${result.machine.cpu} x${result.machine.cores}; ${settings.mode} run`);
  try {
    for (const pair of pairs) {
      const jobs = [['pixelgrad', pair.pixelgrad], ['tfjs', pair.tfjs]];
      // The tuned TF.js WebGPU reference (see tfjs.mjs) runs right after its pair.
      if (args.tuned && pair.tfjs === 'webgpu') jobs.push(['tfjs', 'webgpu-packed']);
      for (const [lib, backend] of jobs) {
        if (!keep.pair(lib, backend)) continue;
        // Large matmuls already get the packed program by default: the reference only trains.
        const todo = workloads.filter(keep.workload).filter((w) => backend !== 'webgpu-packed' || !w.startsWith('matmul-'));
        if (todo.length) await runPair(browser, server, lib, backend, todo, settings, result.runs);
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
  if (args.nativeJson) {
    try {
      result.native = JSON.parse(fs.readFileSync(args.nativeJson, 'utf8'));
    } catch (e) {
      result.native = { error: `could not read ${args.nativeJson}: ${e.message}` };
    }
  }
  result.durationS = Math.round((Date.now() - started.getTime()) / 1000);

  const out = args.out ?? path.join(here, 'results', `${started.toISOString().replace(/[:]/g, '-').replace(/\..*/, '')}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  console.log(`results: ${path.relative(process.cwd(), out)} (${result.durationS} s)`);
  if (args.markdown) {
    // A run from another checkout (a clean clone) is not among this one's results until copied in.
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

/** One page for one (library, backend): init, then each workload with its own time limit. */
async function runPair(browser, server, lib, backend, todo, settings, runs) {
  let page = null;
  let info = null;
  let initError = null;
  const open = async () => {
    page = await newPage(browser);
    await page.goto(`${server.url}/bench/page.html`);
    await page.waitForFunction(() => window.pgBenchReady === true);
    info = await withTimeout(settings.timeoutS * 1000, `${lib} ${backend} init`, () => page.evaluate(([l, b]) => window.pgBench.init(l, b), [lib, backend]), () => page.close());
  };
  const opts = { warmupMs: settings.warmupMs, repeatMs: settings.repeatMs, repeats: settings.repeats };
  for (const workload of todo) {
    const row = { lib, backend, workload };
    if (initError) {
      // The backend did not start once; retrying for every workload would only cost time.
      row.error = initError;
      runs.push(row);
      continue;
    }
    try {
      if (!page || page.isClosed()) {
        try {
          await open();
        } catch (e) {
          initError = `init: ${String(e.message ?? e).split('\n')[0].replace(/^page.evaluate: (Error: )?/, '').slice(0, 280)}`;
          throw new Error(initError);
        }
      }
      Object.assign(row, { library: info.library, adapter: info.adapter, initMs: info.initMs });
      const m = await withTimeout(settings.timeoutS * 1000, `${lib} ${backend} ${workload}`, () => page.evaluate(([w, o]) => window.pgBench.run(w, o), [workload, opts]), () => page.close());
      Object.assign(row, m);
      if (workload.startsWith('matmul-')) {
        const n = Number(workload.split('-')[1]);
        row.unit = 'GFLOP/s';
        row.value = (m.median * 2 * n ** 3) / 1e9;
      } else {
        row.unit = 'steps/s';
        row.value = m.median;
      }
      console.log(`${lib.padEnd(9)} ${backend.padEnd(6)} ${workload.padEnd(12)} ${row.value.toPrecision(4).padStart(10)} ${row.unit}  first step ${Math.round(m.firstStepMs)} ms`);
    } catch (e) {
      row.error ??= String(e.message ?? e).split('\n')[0].replace(/^page.evaluate: (Error: )?/, '').slice(0, 300);
      console.log(`${lib.padEnd(9)} ${backend.padEnd(6)} ${workload.padEnd(12)} failed: ${row.error}`);
      // A failed run may have left the page wedged (lost device, aborted wasm): start afresh.
      if (page && !page.isClosed()) await page.close();
    }
    runs.push(row);
  }
  if (page && !page.isClosed()) await page.close();
}

main().catch((e) => {
  console.error(`bench: ${e.stack ?? e}`);
  process.exit(1);
});
