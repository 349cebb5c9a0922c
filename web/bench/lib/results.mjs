// The committed result files and the generated docs/benchmarks.md (the file-system side of
// lib/benchmarks-doc.mjs).
import fs from 'node:fs';
import path from 'node:path';
import { kindOf, renderBenchmarksDoc } from './benchmarks-doc.mjs';

/** `{ files: [{ name, json }], provenance }` of a results directory (web/bench/results/). */
export function loadResults(dir) {
  const names = fs.readdirSync(dir).filter((n) => kindOf(n)).sort();
  const files = names.map((name) => ({ name, json: JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) }));
  const p = path.join(dir, 'provenance.json');
  const provenance = fs.existsSync(p) ? JSON.parse(fs.readFileSync(p, 'utf8')).files : {};
  return { files, provenance };
}

/** docs/benchmarks.md's text for the checkout at `repoRoot`. */
export function benchmarksDoc(repoRoot) {
  const { files, provenance } = loadResults(path.join(repoRoot, 'web', 'bench', 'results'));
  return renderBenchmarksDoc(files, provenance);
}

/** Regenerates `out` (default docs/benchmarks.md) from the results of the checkout at `repoRoot`. */
export function writeBenchmarksDoc(repoRoot, out = path.join(repoRoot, 'docs', 'benchmarks.md')) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, benchmarksDoc(repoRoot));
}
