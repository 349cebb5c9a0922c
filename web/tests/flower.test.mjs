// `pg.flower` in headless Chromium, served by the federation page server under its
// Content-Security-Policy: partitions match the native ones' contract; bad input is a
// PixelgradError with a clear message and a `kind` while the model stays as it was — an
// unreachable SuperLink (through the page server, which answers 502), a server that is no
// Fleet API, an uncompiled model, data of the wrong shape; a hostile Fleet server
// (crates/pixelgrad-flower/examples/fake_fleet.rs: a non-ASCII object ID, repeated chunk
// references, an endless answer, a stalled server) gives a typed error and the page goes on;
// the page's node key is a non-extractable WebCrypto key kept in IndexedDB. The page server
// itself: security headers on every answer, malformed paths refused without a crash, an
// https:// SuperLink verified against its --ca-file (another CA refused). A whole
// federation of tabs runs in scripts/flower-tests.sh (`cargo xtask federated`).
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { launchBrowser, newPage, webRoot } from './harness.mjs';
import { startPageServer } from '../federated/server.mjs';
import { SECURITY_HEADERS } from '../federated/security.mjs';

const repo = path.resolve(webRoot, '..');
let pageServer;
let browser;
let page;

async function openAt(server) {
  await page.goto(`${server.url}/tests/pages/flower.html`);
  await page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
}

before(async () => {
  // A page server whose SuperLink is a port nothing listens on.
  pageServer = await startPageServer({ superlink: 'http://127.0.0.1:9' });
  browser = await launchBrowser();
  page = await newPage(browser);
  await openAt(pageServer);
});

after(async () => {
  await browser?.close();
  await pageServer?.close();
});

// A request with the path sent as written (no URL normalisation on the way).
function get(url, method = 'GET') {
  const u = new URL(url);
  const rawPath = url.slice(u.origin.length);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: u.hostname, port: u.port, path: rawPath, method }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers }));
    });
    r.on('error', reject);
    r.end();
  });
}

test('page server: security headers on every answer, malformed paths refused, still serving', async () => {
  const u = pageServer.url;
  const cases = [
    ['/tests/pages/flower.html', 'GET', 200],
    ['/pkg/index.js', 'HEAD', 200],
    ['/no/such/file', 'GET', 404],
    ['/%00', 'GET', 400],
    ['/demo/%00.html', 'GET', 400],
    ['/%E0%A4%A', 'GET', 400],
    ['/..%2f..%2fetc%2fpasswd', 'GET', 400],
    ['/demo/../../etc/passwd', 'GET', 400],
    ['/tests/pages/flower.html', 'POST', 404],
    ['/v1/fleet/register-node', 'GET', 405],
    ['/v1/fleet/register-node', 'POST', 502],
    ['/v1/fleet/..%2fsecret', 'POST', 404],
  ];
  for (const [p, method, status] of cases) {
    const r = await get(u + p, method);
    assert.equal(r.status, status, `${method} ${p}`);
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(r.headers[k], v, `${k} on ${method} ${p}`);
  }
  // the server is still up after all of them
  assert.equal((await get(`${u}/tests/pages/flower.html`)).status, 200);
});

test('page server: an https:// SuperLink is verified against --ca-file', async (t) => {
  const py = path.join(repo, 'target/flwr-venv/bin/python');
  if (!fs.existsSync(py)) {
    if (process.env.PIXELGRAD_REQUIRE_FLWR) assert.fail(`flwr venv missing at ${py} (run scripts/flower-venv.sh)`);
    t.skip('no flwr venv (scripts/flower-venv.sh) for the certificates');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-page-tls-'));
  for (const ca of ['a', 'b']) execFileSync(py, [path.join(repo, 'scripts/flower-certs.py'), path.join(dir, ca)]);
  // a stand-in SuperLink with certificate a, answering every Fleet call with 200
  const upstream = https.createServer({ key: fs.readFileSync(path.join(dir, 'a/server.key')), cert: fs.readFileSync(path.join(dir, 'a/server.pem')) }, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/protobuf' }).end());
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const superlink = `https://127.0.0.1:${upstream.address().port}`;
  const post = async (caFile) => {
    const s = await startPageServer({ superlink, caFile });
    try {
      return await new Promise((resolve, reject) => {
        const r = http.request(`${s.url}/v1/fleet/register-node`, { method: 'POST' }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode, body }));
        });
        r.on('error', reject);
        r.end();
      });
    } finally {
      await s.close();
    }
  };
  try {
    assert.equal((await post(path.join(dir, 'a/ca.pem'))).status, 200, 'the right CA');
    const wrong = await post(path.join(dir, 'b/ca.pem'));
    assert.equal(wrong.status, 502, 'another CA');
    assert.match(wrong.body, /TLS with the SuperLink at https:\/\/127\.0\.0\.1:\d+ failed .*--ca-file/);
    const system = await post(undefined);
    assert.equal(system.status, 502, 'the system roots do not know a private CA');
    await assert.rejects(startPageServer({ superlink: 'ftp://x' }), /must be http:\/\/ or https:\/\//);
  } finally {
    await new Promise((r) => upstream.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

async function inPage(fn, arg) {
  return page.evaluate(fn, arg);
}

test('partition: disjoint non-IID shards covering the data, seeded', async () => {
  const r = await inPage(async () => {
    const pg = window.pg;
    await pg.init({ backend: 'cpu' });
    const d = pg.data.digits();
    const parts = [0, 1, 2].map((index) => pg.flower.partition(d, { index, count: 3, alpha: 0.3, seed: 42 }));
    const again = pg.flower.partition(d, { index: 1, count: 3, alpha: 0.3, seed: 42 });
    let bad = null;
    try {
      pg.flower.partition(d, { index: 3, count: 3 });
    } catch (e) {
      bad = e.message;
    }
    return {
      train: parts.map((p) => p.train.n),
      test: parts.map((p) => p.test.n),
      total: d.train.n,
      totalTest: d.test.n,
      same: Array.from(again.train.y).join() === Array.from(parts[1].train.y).join(),
      top: parts.map((p) => {
        const c = new Array(10).fill(0);
        p.train.y.forEach((v) => c[v]++);
        return Math.max(...c) / p.train.n;
      }),
      bad,
    };
  });
  assert.equal(r.train.reduce((a, b) => a + b), r.total);
  assert.equal(r.test.reduce((a, b) => a + b), r.totalTest);
  assert.ok(r.same, 'the same seed gives the same shard');
  assert.ok(Math.max(...r.top) > 0.2, `alpha 0.3 skews the labels: ${r.top}`);
  assert.match(r.bad, /index must be in 0\.\.count-1/);
});

// Joins `server` (default: the page's origin) with a small model; resolves to the error's
// { message, kind } and whether the model stayed as it was.
const tryJoin = async ({ server, opts = {}, compile = true }) => {
  const pg = window.pg;
  await pg.init({ backend: 'cpu' });
  const d = pg.flower.partition(pg.data.digits(), { index: 0, count: 2, seed: 42 });
  const model = pg.sequential([pg.layers.dense({ units: 8, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })]);
  if (compile) model.compile({ optimizer: pg.optimizers.adam(1e-3), loss: 'softmaxCrossEntropy' });
  const weights = async () => Array.from(await model.predict(pg.tensor(d.test.x.subarray(0, 64), [1, 64])).data());
  const before = await weights();
  let out;
  try {
    await pg.flower.join({ server: server || location.origin, model, data: d, ...opts });
    out = { message: 'resolved', kind: null };
  } catch (e) {
    out = { message: e.message, kind: e.kind, typed: e instanceof pg.PixelgradError };
  }
  return { ...out, unchanged: before.join() === (await weights()).join() };
};

test('join: clear errors, the model unchanged', async () => {
  const e = {};
  e.uncompiled = await inPage(tryJoin, { compile: false });
  e.unreachable = await inPage(tryJoin, {});
  e.notFleet = await inPage(tryJoin, { server: `${pageServer.url}/not-a-superlink` });
  e.badServer = await inPage(tryJoin, { server: 'localhost:8080' });
  e.badTimeout = await inPage(tryJoin, { opts: { timeout: -1 } });
  e.badKey = await inPage(tryJoin, { opts: { nodeKey: { publicKey: 'x' } } });
  assert.match(e.uncompiled.message, /not compiled/);
  assert.match(e.unreachable.message, /flower\.join: SuperLink answered 502 .*unreachable/);
  assert.equal(e.unreachable.kind, 'http');
  assert.match(e.notFleet.message, /no Fleet route \/v1\/fleet\/register-node/);
  assert.equal(e.notFleet.kind, 'protocol');
  assert.match(e.badServer.message, /server must be an http\(s\) origin/);
  assert.match(e.badTimeout.message, /timeout must be a positive number/);
  assert.match(e.badKey.message, /nodeKey must come from pg\.flower\.nodeKey\(\)/);
  for (const [k, v] of Object.entries(e)) {
    assert.ok(v.typed, `${k}: a PixelgradError`);
    assert.ok(v.unchanged, `${k}: failed joins leave the model as it was`);
  }
});

test('node key: persistent, non-extractable, signs what its public key verifies', async () => {
  const r = await inPage(async () => {
    const pg = window.pg;
    await pg.init({ backend: 'cpu' });
    await pg.flower.forgetNodeKey({ name: 'test' });
    const none = await pg.flower.nodeKey({ name: 'test', create: false });
    const a = await pg.flower.nodeKey({ name: 'test' });
    const b = await pg.flower.nodeKey({ name: 'test' });
    const other = await pg.flower.nodeKey({ name: 'other' });
    // the stored pair, read straight from IndexedDB
    const stored = await new Promise((resolve, reject) => {
      const open = indexedDB.open('pixelgrad-flower');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const g = open.result.transaction('node-keys').objectStore('node-keys').get('test');
        g.onsuccess = () => resolve(g.result);
        g.onerror = () => reject(g.error);
      };
    });
    let exported = 'exported';
    try {
      await crypto.subtle.exportKey('pkcs8', stored.privateKey);
    } catch (e) {
      exported = e.name;
    }
    const msg = new TextEncoder().encode('2026-12-01T09:34:55.515123+00:00');
    const sig = await a.sign(msg);
    const pub = await crypto.subtle.importKey('spki', a.publicKey, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
    const ok = await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, pub, sig, msg);
    const forgot = await pg.flower.forgetNodeKey({ name: 'test' });
    const fresh = await pg.flower.nodeKey({ name: 'test' });
    return {
      none,
      same: a.openssh === b.openssh,
      differs: a.openssh !== other.openssh && a.openssh !== fresh.openssh,
      openssh: a.openssh,
      fingerprint: a.fingerprint,
      extractable: stored.privateKey.extractable,
      exported,
      ok,
      forgot,
    };
  });
  assert.equal(r.none, null);
  assert.ok(r.same, 'the same key from IndexedDB the second time');
  assert.ok(r.differs, 'other names and a forgotten key give other keys');
  assert.match(r.openssh, /^ecdsa-sha2-nistp256 AAAA[A-Za-z0-9+/=]+$/);
  assert.match(r.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
  assert.equal(r.extractable, false);
  assert.equal(r.exported, 'InvalidAccessError');
  assert.ok(r.ok, 'the signature verifies');
  assert.ok(r.forgot);
});

// A fake Fleet server (crates/pixelgrad-flower/examples/fake_fleet.rs) with one hostile
// behaviour, behind its own page server.
async function fakeFleet(scenario) {
  const bin = path.join(repo, 'target/debug/examples/fake_fleet');
  const child = spawn(bin, [scenario], { stdio: ['pipe', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve);
    child.once('error', reject);
  });
  const server = await startPageServer({ superlink: url });
  return {
    server,
    close: async () => {
      await server.close();
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
    },
  };
}

test('hostile Fleet servers: typed errors, the page and the model intact', async () => {
  execFileSync('cargo', ['build', '-q', '-p', 'pixelgrad-flower', '--features', 'fake-server', '--example', 'fake_fleet'], {
    cwd: repo,
    stdio: 'inherit',
  });
  const cases = [
    ['non-ascii-id', {}, 'protocol', /is not an object ID/],
    ['repeated-chunks', {}, 'limit', /refused: the array elements/],
    ['too-many-objects', {}, 'limit', /refused: the number of objects/],
    ['endless-body', {}, 'limit', /refused: the size of the answer to \/v1\/fleet\/register-node/],
    ['stall', { timeout: 2 }, 'timeout', /did not answer \/v1\/fleet\/register-node within 2 s/],
  ];
  for (const [scenario, opts, kind, message] of cases) {
    const f = await fakeFleet(scenario);
    try {
      await openAt(f.server);
      const r = await inPage(tryJoin, { opts });
      assert.equal(r.kind, kind, `${scenario}: ${r.message}`);
      assert.match(r.message, message, scenario);
      assert.ok(r.typed && r.unchanged, scenario);
      // the instance still works
      const ok = await inPage(async () => Array.from(await window.pg.tensor([1, 2], [2]).data()).join());
      assert.equal(ok, '1,2', `${scenario}: the page goes on`);
    } finally {
      await f.close();
    }
  }
  await openAt(pageServer);
});
