// The JavaScript in the README and the book (docs/src): every ```js block is extracted and
// syntax-checked with `node --check` (as a module: top-level await and imports allowed), and
// the README's browser example runs in headless Chromium, as written, against the built
// package: it must train, log validation loss and accuracy every epoch, and reach the accuracy
// the README promises.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { apiPage } from './api-page.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}

/** The ```js / ```javascript blocks of a Markdown file, with the line each starts on. */
export function jsBlocks(file) {
  const blocks = [];
  let cur = null;
  for (const [i, line] of fs.readFileSync(file, 'utf8').split('\n').entries()) {
    const m = /^(\s*)```(.*)$/.exec(line);
    if (cur === null && m) {
      cur = { lang: m[2].trim(), indent: m[1].length, line: i + 1, lines: [] };
    } else if (cur !== null && m && !m[2].trim()) {
      if (['js', 'javascript'].includes(cur.lang)) blocks.push({ file, line: cur.line, code: cur.lines.join('\n') });
      cur = null;
    } else if (cur !== null) {
      cur.lines.push(line.slice(Math.min(cur.indent, line.length - line.trimStart().length)));
    }
  }
  return blocks;
}

const files = [path.join(repo, 'README.md'), ...markdownFiles(path.join(repo, 'docs/src'))];
const blocks = files.flatMap(jsBlocks);

test('every JS block of the README and the book is valid JavaScript', () => {
  assert.ok(blocks.length >= 10, `found ${blocks.length} JS blocks`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-book-js-'));
  const bad = [];
  try {
    for (const [i, b] of blocks.entries()) {
      const f = path.join(dir, `block-${i}.mjs`);
      fs.writeFileSync(f, b.code);
      try {
        execFileSync(process.execPath, ['--check', f], { stdio: 'pipe' });
      } catch (e) {
        bad.push(`${path.relative(repo, b.file)}:${b.line}: ${String(e.stderr).split('\n').filter((l) => /Error/.test(l))[0]}`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(bad, []);
});

const { ctx } = apiPage();

test("the README's browser example trains in Chromium as written", { timeout: 180_000 }, async () => {
  const readme = jsBlocks(path.join(repo, 'README.md'));
  assert.ok(readme.length >= 1, 'the README has a JS example');
  const code = readme[0].code;
  // The one line that differs in a page of this repository: the package is the built web/pkg.
  const importLine = "import * as pg from 'pixelgrad';";
  assert.ok(code.startsWith(importLine), 'the example imports the package by its name');
  const body = code.split('\n').slice(1).join('\n');
  const logs = await ctx.page.evaluate(async (src) => {
    const out = [];
    const log = { log: (...a) => out.push(a) };
    // eslint-disable-next-line no-new-func
    const run = new Function('pg', 'console', `return (async () => {\n${src}\n})();`);
    await run(window.pg, log);
    return out;
  }, body);
  const epochs = logs.slice(0, -1);
  assert.equal(epochs.length, 5, `one line per epoch: ${JSON.stringify(logs)}`);
  for (const [epoch, loss, valLoss, valAccuracy] of epochs) {
    assert.ok(Number.isInteger(epoch) && loss > 0 && valLoss > 0 && valAccuracy > 0 && valAccuracy <= 1, JSON.stringify(epochs));
  }
  const [backend, accuracy] = logs[logs.length - 1];
  assert.ok(['webgpu', 'webgl', 'webgl1', 'cpu'].includes(backend), backend);
  assert.ok(accuracy > 0.9, `test accuracy ${accuracy}`);
});
