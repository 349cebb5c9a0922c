// Checks the book (docs/src) and the README, the way a reader would follow them:
// - every relative link resolves: a chapter link to a file in docs/src (the built book has
//   nothing else), a README link to a file in the repository; every `#anchor` names a heading
//   of its target (ids as mdBook makes them) or of the same file;
// - every chapter is in SUMMARY.md and everything SUMMARY.md lists exists;
// - every file a chapter names in a code span (`crates/x/tests/y.rs`, `web/tests/z.test.mjs`,
//   `tests/fused.rs` as the end of a tracked path) exists, so a claim's test cannot vanish
//   unnoticed;
// - every code fence names its language (an unmarked block would be compiled as Rust by the
//   doc tests in crates/pixelgrad/src/book.rs) and no Rust block is `ignore`d;
// - the claim map (scripts/claim-map.mjs, which documents it): every section of a chapter ends
//   with a `Tested by:` list of tests that exist in the files it names, or carries
//   `<!-- no behaviour claims: WHY -->`.
// Usage: node scripts/book-links.mjs   (exit status 1 and one line per problem otherwise)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { claimProblems } from './claim-map.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'docs', 'src');
const problems = [];
const rel = (p) => path.relative(root, p);

function chapters(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return chapters(p);
    return e.name.endsWith('.md') ? [p] : [];
  });
}

/** The prose of a Markdown file: fenced blocks blanked (lines kept), fence problems noted. */
function prose(file, text) {
  const lines = text.split('\n');
  let fence = null;
  return lines
    .map((line, i) => {
      const m = /^(\s*)(`{3,})(.*)$/.exec(line);
      if (m && fence === null) {
        fence = m[2];
        const lang = m[3].trim();
        if (!lang) problems.push(`${rel(file)}:${i + 1}: code block without a language (mark it sh, text, js, rust, ...)`);
        if (/^rust\b.*\bignore\b/.test(lang)) problems.push(`${rel(file)}:${i + 1}: \`ignore\`d Rust block (make it compile; no_run if it cannot run in a test)`);
        return '';
      }
      if (m && fence !== null && m[2].length >= fence.length && !m[3].trim()) {
        fence = null;
        return '';
      }
      return fence === null ? line : '';
    })
    .join('\n');
}

/** Heading ids as mdBook makes them: lower case, letters, digits, `-` and `_`, spaces to `-`. */
function anchors(text) {
  const seen = new Map();
  const ids = new Set();
  for (const line of text.split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const plain = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    let id = '';
    for (const ch of plain) {
      if (/[\p{L}\p{N}_-]/u.test(ch)) id += ch.toLowerCase();
      else if (/\s/.test(ch)) id += '-';
    }
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    ids.add(n === 0 ? id : `${id}-${n}`);
  }
  return ids;
}

const cache = new Map();
function anchorsOf(file) {
  if (!cache.has(file)) cache.set(file, anchors(prose(file, fs.readFileSync(file, 'utf8'))));
  return cache.get(file);
}

function checkLinks(file, within) {
  const text = prose(file, fs.readFileSync(file, 'utf8')).replace(/`[^`\n]*`/g, '');
  const re = /\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
  for (const [lineNo, line] of text.split('\n').entries()) {
    for (const m of line.matchAll(re)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [p, anchor] = target.split('#');
      const where = `${rel(file)}:${lineNo + 1}: ${target}`;
      const dest = p ? path.resolve(path.dirname(file), decodeURIComponent(p)) : file;
      if (!fs.existsSync(dest)) {
        problems.push(`${where}: no such file`);
        continue;
      }
      if (!dest.startsWith(within + path.sep) && dest !== within) {
        problems.push(`${where}: outside ${rel(within) || '.'} (the built book has only docs/src)`);
        continue;
      }
      if (anchor !== undefined && dest.endsWith('.md') && !anchorsOf(dest).has(anchor)) {
        problems.push(`${where}: no heading with id #${anchor} in ${rel(dest)}`);
      }
    }
  }
}

const files = chapters(src);
for (const f of files) checkLinks(f, src);
prose(path.join(root, 'README.md'), fs.readFileSync(path.join(root, 'README.md'), 'utf8'));
checkLinks(path.join(root, 'README.md'), root);

// Files named in code spans: a path with a folder and a source extension must be a tracked file
// (from the repository root), or the end of one (`tests/fused.rs`). Output names are exempt.
let tracked;
try {
  tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n');
} catch {
  // not a git checkout (a source archive): every file there counts
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.name === 'target' || e.name === 'node_modules' || e.name.startsWith('.') ? []
      : e.isDirectory() ? walk(path.join(d, e.name)) : [path.relative(root, path.join(d, e.name))]);
  tracked = walk(root);
}
const named = /`((?:[\w.-]+\/)+[\w.-]+\.(?:rs|mjs|js|sh|py|glsl|wgsl|toml|ts))`/g;
for (const file of [...files, path.join(root, 'README.md')]) {
  for (const [lineNo, line] of prose(file, fs.readFileSync(file, 'utf8')).split('\n').entries()) {
    for (const m of line.matchAll(named)) {
      const p = m[1];
      if (tracked.includes(p) || tracked.some((t) => t.endsWith(`/${p}`))) continue;
      problems.push(`${rel(file)}:${lineNo + 1}: \`${p}\` names no file in the repository`);
    }
  }
}

// The claim map: every section's tests exist (SUMMARY.md is a table of contents, not a chapter).
const testFile = (span) => {
  const hits = tracked.includes(span) ? [span] : tracked.filter((t) => t.endsWith(`/${span}`));
  if (hits.length !== 1 || !fs.existsSync(path.join(root, hits[0]))) return null;
  return { path: hits[0], text: fs.readFileSync(path.join(root, hits[0]), 'utf8') };
};
for (const file of files) {
  if (path.basename(file) === 'SUMMARY.md' && path.dirname(file) === src) continue;
  problems.push(...claimProblems(rel(file), prose(file, fs.readFileSync(file, 'utf8')), testFile));
}

const summary = path.join(src, 'SUMMARY.md');
const listed = new Set(
  [...fs.readFileSync(summary, 'utf8').matchAll(/\]\(([^)]+)\)/g)].map((m) => path.resolve(src, m[1])),
);
for (const f of files) if (f !== summary && !listed.has(f)) problems.push(`${rel(f)}: not in SUMMARY.md`);

if (problems.length) {
  const unique = [...new Set(problems)];
  for (const p of unique) console.error(p);
  console.error(`book links: ${unique.length} problem(s)`);
  process.exit(1);
}
console.log(`book links: ${files.length} files in docs/src and README.md, every link and anchor resolves, every section's tests exist`);
