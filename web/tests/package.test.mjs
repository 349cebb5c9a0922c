// The npm package as a user gets it: the built manifest (web/pkg, from the checked-in
// web/js/package.json), the TypeScript checks (sources against index.d.ts, the typed usage
// file), and `npm pack` output installed offline into a scratch project, then imported from
// Node (the CPU backend runs there) and from a page in Chromium.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startServer, launchBrowser, newPage, cspViolations, webRoot } from './harness.mjs';
import { classMembers, exportedNames, hasTopLevelEffects, valueNames } from './declarations.mjs';

const repoRoot = path.resolve(webRoot, '..');
const pkgDir = path.join(webRoot, 'pkg');
const jsDir = path.join(webRoot, 'js');
const tsc = path.join(webRoot, 'node_modules', '.bin', 'tsc');
const dts = fs.readFileSync(path.join(jsDir, 'index.d.ts'), 'utf8');
const usage = fs.readFileSync(path.join(webRoot, 'types', 'usage.ts'), 'utf8');

/** The Rust workspace's version (Cargo.toml, [workspace.package]): the package's one source. */
function workspaceVersion() {
  const toml = fs.readFileSync(path.join(repoRoot, 'Cargo.toml'), 'utf8');
  const m = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(toml);
  assert.ok(m, 'Cargo.toml has a [workspace.package] version');
  return m[1];
}

function run(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed:\n${e.stdout || ''}${e.stderr || ''}`);
  }
}

test('the built manifest: workspace version, exports with types and import, sideEffects naming every module that acts at load', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const source = JSON.parse(fs.readFileSync(path.join(jsDir, 'package.json'), 'utf8'));
  const version = workspaceVersion();
  assert.equal(manifest.version, version);
  assert.equal(source.version, '0.0.0-source', 'the checked-in manifest carries the placeholder; build-wasm stamps the version');
  assert.deepEqual({ ...manifest, version: null }, { ...source, version: null }, 'only the version differs from web/js/package.json');
  assert.match(fs.readFileSync(path.join(pkgDir, 'version.js'), 'utf8'), new RegExp(`version = '${version.replace(/\./g, '\\.')}'`));
  assert.deepEqual(Object.keys(manifest.exports['.']).slice(0, 2), ['types', 'import'], '`types` must come first to be picked');
  assert.equal(manifest.type, 'module');
  assert.ok(manifest.engines && manifest.engines.node, 'engines.node');

  const listed = new Set(manifest.sideEffects.map((f) => f.replace(/^\.\//, '')));
  const acting = fs.readdirSync(jsDir).filter((f) => f.endsWith('.js') && hasTopLevelEffects(fs.readFileSync(path.join(jsDir, f), 'utf8')));
  assert.ok(acting.includes('index.js'), 'index.js patches the API classes at load');
  for (const f of acting) assert.ok(listed.has(f), `${f} runs statements at load but is not in package.json's sideEffects`);
  for (const f of listed) assert.ok(fs.existsSync(path.join(pkgDir, f)), `sideEffects names ${f}, which the package lacks`);
});

test('tsc: the JSDoc-typed sources implement index.d.ts, and the typed usage file compiles against it', () => {
  run(tsc, ['-p', 'tsconfig.json'], webRoot);
  run(tsc, ['-p', 'types/tsconfig.json'], webRoot);
});

test('the typed usage file uses every export of index.d.ts and every member of its classes', () => {
  const used = (name) => new RegExp(`\\bpg\\.${name.replace(/\$/g, '\\$')}\\b`).test(usage);
  const missing = exportedNames(dts).filter((n) => !used(n));
  assert.deepEqual(missing, [], 'exports of index.d.ts that web/types/usage.ts does not use');
  const members = classMembers(dts);
  assert.ok(members.Sequential.includes('fit') && members.Runtime.includes('crossCheck'), 'class members are read');
  for (const [cls, names] of Object.entries(members)) {
    const absent = names.filter((n) => !new RegExp(`\\.${n}\\b`).test(usage));
    assert.deepEqual(absent, [], `members of ${cls} that web/types/usage.ts does not use`);
  }
});

test('web/js imports from the source tree (unbuilt: placeholder version, and init says the wasm module is missing)', async () => {
  const pg = await import(new URL('../js/index.js', import.meta.url).href);
  assert.deepEqual(Object.keys(pg).sort(), valueNames(dts).sort());
  assert.equal(pg.version, '0.0.0-source');
  await assert.rejects(pg.init({ backend: 'cpu' }), (e) => e instanceof pg.PixelgradError && /could not load the wasm module/.test(e.message));
});

test('the tokenizer is its own module: the main wasm stays under the 8 MiB a page may instantiate on its main thread and has no tokenizer in it', async () => {
  const main = fs.readFileSync(path.join(pkgDir, 'pixelgrad_web_bg.wasm'));
  const text = fs.readFileSync(path.join(pkgDir, 'pixelgrad_text_bg.wasm'));
  // Chrome refuses `new WebAssembly.Instance` on the main thread above 8 MiB, and the crash
  // recovery instantiates the main module that way (web/js/instance.js).
  assert.ok(main.length < 8 * 1024 * 1024, `pixelgrad_web_bg.wasm is ${(main.length / 1048576).toFixed(2)} MiB`);
  const names = async (bytes) => WebAssembly.Module.exports(await WebAssembly.compile(bytes)).map((e) => e.name);
  const mainExports = await names(main);
  const textExports = await names(text);
  assert.ok(mainExports.some((n) => n.startsWith('runtime_')), 'the main module exports its runtime');
  assert.deepEqual(mainExports.filter((n) => /tokenizer/i.test(n)), [], 'the main module exports tokenizer calls');
  assert.ok(textExports.includes('texttokenizer_fromJson'), `the text module exports: ${textExports.slice(0, 8)}`);
  assert.ok(!textExports.some((n) => n.startsWith('runtime_')), 'the text module carries the engine');
  // the `tokenizers` crate's own symbols do not survive in a stripped module; its size does:
  assert.ok(text.length < main.length, `text module ${text.length} bytes against the main ${main.length}`);
});

test('npm pack, installed offline into a scratch project: imported from Node (CPU backend), typed through exports, and from a page in Chromium', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-pack-'));
  try {
    const version = workspaceVersion();
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], pkgDir));
    const tarball = path.join(tmp, packed[0].filename);
    assert.equal(packed[0].filename, `pixelgrad-${version}.tgz`);
    const shipped = packed[0].files.map((f) => f.path).sort();
    for (const f of shipped) assert.match(f, /^([\w-]+\.js|[\w-]+\.d\.ts|pixelgrad_(web(_threads)?|text)_bg\.wasm(\.d\.ts)?|package\.json|README\.md|CHANGELOG\.md)$/, `unexpected file in the package: ${f}`);
    for (const f of ['index.js', 'index.d.ts', 'pixelgrad_web.js', 'pixelgrad_web_bg.wasm', 'pixelgrad_text.js', 'pixelgrad_text_bg.wasm', 'textmodule.js', 'version.js', 'README.md', 'CHANGELOG.md']) assert.ok(shipped.includes(f), `the package lacks ${f}`);

    const app = path.join(tmp, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], app);
    assert.equal(JSON.parse(fs.readFileSync(path.join(app, 'node_modules/pixelgrad/package.json'), 'utf8')).version, version);

    // Node: the bare specifier through `exports`; internal files are not importable.
    fs.writeFileSync(
      path.join(app, 'node.mjs'),
      `import * as pg from 'pixelgrad';
import fs from 'node:fs';
import { createRequire } from 'node:module';
const out = { version: pg.version, exports: Object.keys(pg).sort() };
// the tokenizer's own module, from its bytes (before and without the main module)
const textWasm = createRequire(import.meta.url).resolve('pixelgrad/pixelgrad_text_bg.wasm');
const tok = await pg.tokenizer(fs.readFileSync(${JSON.stringify(path.join(repoRoot, 'crates/pixelgrad-text/fixtures/wordpiece.json'))}), { wasmUrl: fs.readFileSync(textWasm) });
out.tokenized = tok.decode(tok.encode('The cat sat.').ids);
try { await import('pixelgrad/runtime.js'); out.internal = 'importable'; } catch (e) { out.internal = e.code; }
const wasm = createRequire(import.meta.url).resolve('pixelgrad/pixelgrad_web_bg.wasm');
await pg.loadWasm({ wasmUrl: fs.readFileSync(wasm) });
const rt = await pg.init({ backend: 'cpu' });
out.backend = rt.backend;
out.product = Array.from(await pg.matmul(pg.tensor([[1, 2], [3, 4]]), pg.tensor([[5, 6], [7, 8]])).data());
const d = pg.data.digits();
const m = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })]);
m.compile({ optimizer: pg.optimizers.adam(0.01), loss: 'softmaxCrossEntropy', metrics: ['accuracy'] });
const h = await m.fit(pg.tensor(d.train.x, [d.train.n, 64]), pg.tensor(d.train.y, [d.train.n]), { epochs: 2, batchSize: 32, seed: 1 });
out.losses = h.history.loss;
try { pg.tensor([1, 2, 3], [2, 2]); } catch (e) { out.error = { isPixelgradError: e instanceof pg.PixelgradError, kind: e.kind, op: e.op }; }
console.log(JSON.stringify(out));
`,
    );
    const node = JSON.parse(run(process.execPath, ['node.mjs'], app).trim().split('\n').pop());
    assert.equal(node.version, version);
    assert.equal(node.tokenized, 'the cat sat.');
    assert.deepEqual(node.exports, valueNames(dts).sort(), 'the runtime exports are exactly the values index.d.ts declares');
    assert.equal(node.internal, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
    assert.equal(node.backend, 'cpu');
    assert.deepEqual(node.product, [19, 22, 43, 50]);
    assert.equal(node.losses.length, 2);
    assert.ok(node.losses[1] < node.losses[0], `training lowers the loss: ${node.losses}`);
    assert.deepEqual(node.error, { isPixelgradError: true, kind: 'invalid', op: 'pg.tensor' });

    // TypeScript in the scratch project: 'pixelgrad' resolves through exports' `types` condition.
    fs.copyFileSync(path.join(webRoot, 'types', 'usage.ts'), path.join(app, 'usage.ts'));
    fs.writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2023', 'dom', 'dom.iterable'], strict: true, noEmit: true }, files: ['usage.ts'] }),
    );
    run(tsc, ['-p', 'tsconfig.json', '--traceResolution'], app).includes('node_modules/pixelgrad/index.d.ts') || assert.fail("'pixelgrad' did not resolve to the installed index.d.ts");

    // Chromium: a page of the app imports the installed package (served with the project's
    // security headers), loads the .wasm from its default place next to index.js and trains.
    fs.writeFileSync(path.join(app, 'index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>app</title><script type="module" src="app.js"></script>');
    fs.writeFileSync(
      path.join(app, 'app.js'),
      `import * as pg from './node_modules/pixelgrad/index.js';
window.result = (async () => {
  const rt = await pg.init({ backend: 'cpu' });
  const product = Array.from(await pg.matmul(pg.tensor([[1, 2], [3, 4]]), pg.tensor([[5, 6], [7, 8]])).data());
  return { version: pg.version, backend: rt.backend, product, exports: Object.keys(pg).length };
})().catch((e) => ({ error: String(e && e.message) }));
`,
    );
    const server = await startServer(app);
    const browser = await launchBrowser();
    try {
      const page = await newPage(browser);
      await page.goto(`${server.url}/index.html`);
      const r = await page.evaluate(() => window.result);
      assert.deepEqual(r, { version, backend: 'cpu', product: [19, 22, 43, 50], exports: valueNames(dts).length });
      assert.deepEqual(await cspViolations(page), []);
    } finally {
      await browser.close();
      await server.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
