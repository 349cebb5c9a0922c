// The page server every browser test and benchmark uses (web/server/static.mjs through
// harness.mjs): hostile request targets get a 4xx and the server keeps serving (`GET /%00`
// used to throw inside the handler and end the process), nothing outside the served folder
// is reachable (`..`, encoded or raw, and symlinks), and every response carries the security
// headers. No browser: raw HTTP over a socket, so targets reach the server byte for byte.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startServer } from './harness.mjs';
import { SECURITY_HEADERS, resolvePath } from '../server/static.mjs';

let root;
let server;

before(async () => {
  // a folder with a page, a subfolder with index.html, and a symlink leading out of it
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-static-'));
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-outside-'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.writeFileSync(path.join(root, 'page.html'), '<!doctype html><p>hi</p>');
  fs.mkdirSync(path.join(root, 'sub'));
  fs.writeFileSync(path.join(root, 'sub', 'index.html'), 'sub index');
  fs.writeFileSync(path.join(root, 'a b.js'), 'export {};');
  fs.symlinkSync(outside, path.join(root, 'link'));
  server = await startServer(root);
});

after(async () => {
  await server?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Sends `target` verbatim in a GET (or `method`) request; resolves to `{ status, headers, body }`. */
function raw(target, method = 'GET') {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, '127.0.0.1');
    const chunks = [];
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [head, ...rest] = text.split('\r\n\r\n');
      const lines = head.split('\r\n');
      const status = Number((/^HTTP\/1\.1 (\d+)/.exec(lines[0]) || [])[1]);
      const headers = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status, headers, body: rest.join('\r\n\r\n') });
    });
    sock.write(Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, 'latin1'));
  });
}

function assertHeaders(r, what) {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(r.headers[k], v, `${what}: header ${k}`);
}

test('files are served with their type and the security headers', async () => {
  const page = await raw('/page.html');
  assert.equal(page.status, 200);
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(page.body, '<!doctype html><p>hi</p>');
  assertHeaders(page, 'page');
  assert.match(page.headers['content-security-policy'], /script-src 'self' 'wasm-unsafe-eval';/);
  const sub = await raw('/sub/?x=1');
  assert.equal(sub.status, 200);
  assert.equal(sub.body, 'sub index');
  const spaced = await raw('/a%20b.js');
  assert.equal(spaced.status, 200);
  assert.equal(spaced.headers['content-type'], 'text/javascript; charset=utf-8');
  const head = await raw('/page.html', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body, '');
  const post = await raw('/page.html', 'POST');
  assert.equal(post.status, 405);
  assertHeaders(post, 'POST');
});

test('hostile targets get a 4xx, never a crash, and the server keeps serving', async () => {
  const cases = {
    '/%00': 400,
    '/page.html%00.txt': 400,
    '/%': 400,
    '/%zz': 400,
    '/%c0%ae%c0%ae/etc/passwd': 400, // overlong UTF-8 for '.'
    '/%ff': 400,
    '/..%2f..%2f..%2fetc%2fpasswd': 403,
    '/%2e%2e/%2e%2e/etc/passwd': 403,
    '/../../../etc/passwd': 403,
    '/sub/../../etc/passwd': 403,
    '/sub/..%5c..%5cpage.html': 400,
    '/link/secret.txt': 404, // a symlink out of the folder
    '/missing.html': 404,
    [`/${'a'.repeat(3000)}`]: 414,
    [`/${'%2e%2e/'.repeat(400)}x`]: 414,
    [`/${'a'.repeat(100000)}`]: 431, // over Node's header limit: answered by Node's parser
  };
  for (const [target, want] of Object.entries(cases)) {
    const r = await raw(target);
    assert.equal(r.status, want, `${target.slice(0, 40)}: status ${r.status}`);
    assert.doesNotMatch(r.body, /secret|root:/, target.slice(0, 40));
    if (want !== 431) assertHeaders(r, target.slice(0, 40));
    // still alive
    assert.equal((await raw('/page.html')).status, 200, `after ${target.slice(0, 40)}`);
  }
});

test('resolvePath stays under the root whatever the target', () => {
  const base = path.resolve('/srv/web');
  assert.equal(resolvePath(base, '/demo/main.js?x=1').file, path.join(base, 'demo', 'main.js'));
  assert.equal(resolvePath(base, '/').file, base);
  assert.equal(resolvePath(base, '//etc/passwd').file, path.join(base, 'etc', 'passwd'));
  assert.equal(resolvePath(base, '/./a/./b').file, path.join(base, 'a', 'b'));
  assert.equal(resolvePath(base, '/a/..').status, 403);
  assert.equal(resolvePath(base, 'relative').status, 400);
  assert.equal(resolvePath(base, '/%E0%A4%A').status, 400);
});

test('a benchmark server adds blob: to script-src only when asked; the default policy has no blob: scripts', async () => {
  assert.doesNotMatch(SECURITY_HEADERS['content-security-policy'], /script-src[^;]*blob:/);
  const bench = await startServer(root, 0, { scriptSources: ['blob:'] });
  try {
    const r = await fetch(`${bench.url}/page.html`);
    const csp = r.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self' 'wasm-unsafe-eval' blob:;/);
    // everything else as the default policy
    assert.equal(csp.replace("'wasm-unsafe-eval' blob:;", "'wasm-unsafe-eval';"), SECURITY_HEADERS['content-security-policy']);
  } finally {
    await bench.close();
  }
});
