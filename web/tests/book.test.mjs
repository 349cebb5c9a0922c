// The JavaScript in the README and the book (docs/src): every ```js block is extracted and
// syntax-checked with `node --check` (as a module: top-level await and imports allowed); the
// README's browser example runs in headless Chromium, as written, against the built package (it
// must train, log validation loss and accuracy every epoch, and reach the accuracy the README
// promises); and every block of the book runs there too, after the scene its marker names.
//
// A book block is a fragment (`model.fit(x, y, ...)`): the line before its fence is a marker,
// `<!-- book-test: SCENE [backend=NAME] -->`, an HTML comment the rendered book does not show.
// The scene defines the names the fragment uses and does not define (SCENES below); the block
// runs in a nested scope, so it may declare the same names again. `<!-- book-test: skip: WHY -->`
// names the test that runs that code instead. A block without a marker fails the test, so a new
// example is either run or says why not.
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
  let prev = '';
  for (const [i, line] of fs.readFileSync(file, 'utf8').split('\n').entries()) {
    const m = /^(\s*)```(.*)$/.exec(line);
    if (cur === null && m) {
      const marker = /^<!--\s*book-test:\s*(.*?)\s*-->$/.exec(prev.trim());
      cur = { lang: m[2].trim(), indent: m[1].length, line: i + 1, lines: [], marker: marker ? marker[1] : null };
    } else if (cur !== null && m && !m[2].trim()) {
      if (['js', 'javascript'].includes(cur.lang)) blocks.push({ file, line: cur.line, code: cur.lines.join('\n'), marker: cur.marker });
      cur = null;
    } else if (cur !== null) {
      cur.lines.push(line.slice(Math.min(cur.indent, line.length - line.trimStart().length)));
    }
    if (line.trim()) prev = line;
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

// The scenes a book block can run after (see the top of this file). Each is source text run in
// the page before the block, with `pg` and `backend` (the marker's backend=, default 'auto') in
// scope; `setup` runs in Node first (routes, files).
const digitsData = `
  const d = pg.data.digits();                           // as in the README
  const x = pg.tensor(d.train.x, [d.train.n, 64]);
  const y = pg.tensor(d.train.y, [d.train.n]);
  const xt = pg.tensor(d.test.x, [d.test.n, 64]);
  const yt = pg.tensor(d.test.y, [d.test.n]);`;
const SCENES = {
  // nothing but the package (and a canvas on the page)
  page: { prelude: '' },
  // the README's digits MLP, compiled, with its data
  'digits-model': {
    prelude: `const rt = await pg.init({ backend });
      ${digitsData}
      const model = pg.sequential([
        pg.layers.dense({ units: 32, inputShape: [64], activation: 'relu' }),
        pg.layers.dense({ units: 10 }),
      ], { seed: 1 });
      model.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });`,
  },
  // the PP-OCR classifier at the URL the guide uses; digits drawn as 48x48x3 images; a 3x48x192 input
  onnx: {
    setup: async (page) => {
      execFileSync('bash', [path.join(repo, 'scripts', 'onnx-fixtures.sh')], { stdio: 'inherit' });
      const body = fs.readFileSync(path.join(repo, 'target/onnx-fixtures/models/ppocr_cls/model.onnx'));
      await page.route('**/models/ch_ppocr_mobile_v2.0_cls_infer.onnx', (r) => r.fulfill({ body, contentType: 'application/octet-stream' }));
    },
    prelude: `const d = pg.data.digits();
      const n = 64;
      const img = new Float32Array(n * 48 * 48 * 3);
      for (let s = 0; s < n; s++) for (let r = 0; r < 48; r++) for (let c = 0; c < 48; c++) {
        const v = 1 - 2 * d.train.x[s * 64 + Math.floor(r / 6) * 8 + Math.floor(c / 6)];
        for (let k = 0; k < 3; k++) img[((s * 48 + r) * 48 + c) * 3 + k] = v;
      }
      const x = pg.tensor(img, [n, 48, 48, 3]);
      const y = pg.tensor(d.train.y.slice(0, n), [n]);
      const pixels = new Float32Array(3 * 48 * 192).map((_, i) => (i % 192) / 96 - 1);`,
  },
  // a camera-like source (a 320x240 canvas), an I420 VideoFrame with its buffer, an exported
  // ONNX classifier whose output is named 'logits', boxes and scores, a low-resolution mask
  // and an overlay canvas
  camera: {
    prelude: `const rt = await pg.init({ backend });
      const video = document.createElement('canvas');
      video.width = 320; video.height = 240;
      const c2d = video.getContext('2d');
      const grad = c2d.createLinearGradient(0, 0, 320, 240);
      grad.addColorStop(0, '#123456'); grad.addColorStop(1, '#ffcc88');
      c2d.fillStyle = grad; c2d.fillRect(0, 0, 320, 240);
      const head = pg.sequential([pg.layers.flatten({ inputShape: [3, 224, 224] }), pg.layers.dense({ units: 10 })], { seed: 1 });
      const exported = await pg.loadOnnx(await head.toOnnx());
      const onnxModel = { run: async (feeds) => ({ logits: (await exported.run(feeds))[exported.outputs[0].name] }) };
      const boxes = pg.tensor(new Float32Array([10, 10, 100, 100, 12, 12, 98, 102, 150, 150, 200, 200]), [3, 4]);
      const scores = pg.tensor(new Float32Array([0.9, 0.8, 0.7]), [3]);
      const lowResMask = pg.tensor(new Float32Array(60 * 80).map((_, i) => (i % 80) / 80), [1, 1, 60, 80]);
      const overlayCanvas = document.createElement('canvas');
      overlayCanvas.width = 640; overlayCanvas.height = 480;
      document.body.append(overlayCanvas);
      const [x0, y0, x1, y1] = [10, 20, 100, 120];
      const yuv = new Uint8Array(320 * 240 * 3 / 2).map((_, i) => i % 251);
      const frame = new VideoFrame(yuv, { format: 'I420', codedWidth: 320, codedHeight: 240, timestamp: 0,
        colorSpace: { matrix: 'bt709', fullRange: false, primaries: 'bt709', transfer: 'bt709' } });
      const buf = new Uint8Array(frame.allocationSize());`,
  },
};

const bookBlocks = markdownFiles(path.join(repo, 'docs/src')).flatMap(jsBlocks);

test('every JS block of the book has a book-test marker naming a known scene or why it is skipped', () => {
  const bad = bookBlocks
    .filter((b) => !b.marker || !(b.marker.startsWith('skip:') ? b.marker.length > 'skip:'.length + 10 : SCENES[b.marker.split(/\s+/)[0]]))
    .map((b) => `${path.relative(repo, b.file)}:${b.line}: ${b.marker === null ? 'no <!-- book-test: SCENE --> line before the fence' : `unknown scene '${b.marker}'`}`);
  assert.deepEqual(bad, []);
});

for (const b of bookBlocks) {
  const where = `${path.relative(repo, b.file)}:${b.line}`;
  const marker = b.marker || '';
  if (marker.startsWith('skip:')) {
    test(`book block ${where} runs in Chromium`, { skip: marker.slice('skip:'.length).trim() }, () => {});
    continue;
  }
  const [sceneName, ...opts] = marker.split(/\s+/);
  const scene = SCENES[sceneName];
  if (!scene) continue; // reported by the marker test above
  const backend = (opts.find((o) => o.startsWith('backend=')) || 'backend=auto').slice('backend='.length);
  test(`book block ${where} runs in Chromium (${marker})`, { timeout: 240_000 }, async () => {
    if (scene.setup) await scene.setup(ctx.page);
    // The guides import the package by its name or from ./pkg; in this page it is window.pg.
    const code = b.code.split('\n').filter((l) => !/^import \* as pg from /.test(l)).join('\n');
    const r = await ctx.page.evaluate(async ([prelude, block, backend]) => {
      if (!document.querySelector('canvas')) document.body.append(document.createElement('canvas'));
      const logs = [];
      const console = { log: (...a) => logs.push(a.map(String).join(' ')) };
      try {
        // eslint-disable-next-line no-new-func
        const run = new Function('pg', 'console', 'backend', `return (async () => {\n${prelude}\n{\n${block}\n}\n})();`);
        await run(window.pg, console, backend);
        return { ok: true, logs };
      } catch (e) {
        return { ok: false, error: `${e && e.name}: ${e && e.message}`, logs };
      }
    }, [scene.prelude, code, backend]);
    assert.ok(r.ok, `${where}: ${r.error}\nlogs: ${r.logs.join('\n')}`);
  });
}
