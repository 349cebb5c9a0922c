// docs/benchmarks.md from the committed results (web/bench/results/*.json); what
// `cargo xtask bench-report` runs.
//
//   node web/bench/bench-report.mjs            regenerate docs/benchmarks.md
//   node web/bench/bench-report.mjs --check    exit 1 if docs/benchmarks.md differs from what the results give
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchmarksDoc, writeBenchmarksDoc } from './lib/results.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const doc = path.join(repoRoot, 'docs', 'benchmarks.md');
const args = process.argv.slice(2);
const bad = args.find((a) => a !== '--check');
if (bad) {
  console.error(`bench-report: unknown argument '${bad}' (usage: cargo xtask bench-report [--check])`);
  process.exit(2);
}
if (args.includes('--check')) {
  const want = benchmarksDoc(repoRoot);
  const have = fs.existsSync(doc) ? fs.readFileSync(doc, 'utf8') : '';
  if (want !== have) {
    console.error('bench-report: docs/benchmarks.md is out of date with web/bench/results; run `cargo xtask bench-report` and commit it');
    process.exit(1);
  }
  console.log('bench-report: docs/benchmarks.md is up to date');
} else {
  writeBenchmarksDoc(repoRoot, doc);
  console.log(`bench-report: wrote ${path.relative(process.cwd(), doc)}`);
}
