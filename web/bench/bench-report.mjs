// docs/benchmarks.md from the committed results (web/bench/results/*.json); what
// `cargo xtask bench-report` runs.
//
//   node web/bench/bench-report.mjs            regenerate docs/benchmarks.md
//   node web/bench/bench-report.mjs --check    exit 1 if docs/benchmarks.md differs from what the results give
//   --include FILE                             also a result file git does not track yet (a run just made)
//
// The results are the files git tracks in web/bench/results/ (they are git-ignored until kept
// with `git add -f`), so runs nobody kept never reach the page.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchmarksDoc, writeBenchmarksDoc } from './lib/results.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const doc = path.join(repoRoot, 'docs', 'benchmarks.md');
const args = process.argv.slice(2);
let check = false;
const extra = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--check') check = true;
  else if (args[i] === '--include' && i + 1 < args.length) extra.push(path.basename(args[++i]));
  else {
    console.error(`bench-report: unknown argument '${args[i]}' (usage: cargo xtask bench-report [--check] [--include RESULT_FILE])`);
    process.exit(2);
  }
}
if (check) {
  const want = benchmarksDoc(repoRoot, extra);
  const have = fs.existsSync(doc) ? fs.readFileSync(doc, 'utf8') : '';
  if (want !== have) {
    console.error('bench-report: docs/benchmarks.md is out of date with the committed results in web/bench/results; run `cargo xtask bench-report` and commit it');
    process.exit(1);
  }
  console.log('bench-report: docs/benchmarks.md is up to date');
} else {
  writeBenchmarksDoc(repoRoot, doc, extra);
  console.log(`bench-report: wrote ${path.relative(process.cwd(), doc)}`);
}
