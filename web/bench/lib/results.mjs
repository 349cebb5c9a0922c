// The committed result files and the generated docs/benchmarks.md (the file-system side of
// lib/benchmarks-doc.mjs). Result files are git-ignored until someone keeps one
// (`git add -f`), so the page is made from the files git tracks (plus, right after a run, the
// file it just wrote): local runs nobody kept never reach it, and a page that names a file
// which was not committed fails the freshness test in CI.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { kindOf, renderBenchmarksDoc } from './benchmarks-doc.mjs';

/** Names of the result files git tracks in `dir` (all files there outside a git checkout). */
function trackedNames(dir) {
  try {
    const out = execFileSync('git', ['-C', dir, 'ls-files', '-z', '--', '.'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\0').filter((n) => n && !n.includes('/'));
  } catch {
    return fs.readdirSync(dir);
  }
}

/** `{ files: [{ name, json }], provenance }` of a results directory; `extra`: more file names in it to include. */
export function loadResults(dir, extra = []) {
  const names = [...new Set([...trackedNames(dir), ...extra])].filter((n) => kindOf(n)).sort();
  const files = names.map((name) => ({ name, json: JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) }));
  const p = path.join(dir, 'provenance.json');
  const provenance = fs.existsSync(p) ? JSON.parse(fs.readFileSync(p, 'utf8')).files : {};
  return { files, provenance };
}

/** docs/benchmarks.md's text for the checkout at `repoRoot` (`extra`: untracked result files to include). */
export function benchmarksDoc(repoRoot, extra = []) {
  const { files, provenance } = loadResults(path.join(repoRoot, 'web', 'bench', 'results'), extra);
  return renderBenchmarksDoc(files, provenance);
}

/** Regenerates `out` (default docs/benchmarks.md) from the results of the checkout at `repoRoot`. */
export function writeBenchmarksDoc(repoRoot, out = path.join(repoRoot, 'docs', 'benchmarks.md'), extra = []) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, benchmarksDoc(repoRoot, extra));
}
