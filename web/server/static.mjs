// The static file server every Node page server of the project uses (the test harness, the
// benchmarks; web/tests/harness.mjs): GET and HEAD of files under one root, with the project's
// security headers on every response, and no request that can crash it or leave the root.
//
//   import { startStaticServer } from '../server/static.mjs';
//   const s = await startStaticServer('/path/to/web');   // { url, port, server, close() }
//
// A request is answered, never thrown on: a malformed percent-encoding (`/%`, `/%zz`, an
// invalid UTF-8 sequence), a NUL byte (`/%00`), a backslash, a `..` segment (raw or encoded), a
// symlink leading out of the root, or a URL over `MAX_URL` characters each get a 4xx; anything
// unexpected a 500. web/tests/server.test.mjs sends each of them.

import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';

/**
 * The headers of every response (common brief; DESIGN.md "Trust boundaries"). The CSP allows
 * only same-origin scripts (no inline script, no eval; `'wasm-unsafe-eval'` lets the module
 * compile), same-origin and blob: workers, and camera streams; COOP + COEP make pages
 * cross-origin isolated (`crossOriginIsolated === true`, which SharedArrayBuffer and the
 * threaded CPU backend need).
 */
export const SECURITY_HEADERS = Object.freeze({
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
    "media-src 'self' blob: mediastream:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
});

/** Longest request target served (longer: 414). */
export const MAX_URL = 2048;

export const MIME = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ts': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.csv': 'text/csv',
  '.onnx': 'application/octet-stream',
});

/**
 * The path under `root` that request target `target` names, or `{ status, reason }` when it
 * names none: 400 for a malformed or NUL-bearing path, 403 for one that would leave the root.
 * Pure string work; the file system is not touched.
 */
export function resolvePath(root, target) {
  if (typeof target !== 'string' || !target.startsWith('/')) return { status: 400, reason: 'the request target must be an absolute path' };
  if (target.length > MAX_URL) return { status: 414, reason: `the URL is longer than ${MAX_URL} characters` };
  const raw = target.split(/[?#]/, 1)[0];
  let rel;
  try {
    rel = decodeURIComponent(raw);
  } catch {
    return { status: 400, reason: 'malformed percent-encoding' };
  }
  if (rel.includes('\0')) return { status: 400, reason: 'NUL in the path' };
  if (rel.includes('\\')) return { status: 400, reason: 'backslash in the path' };
  const segments = rel.split('/');
  if (segments.some((s) => s === '..')) return { status: 403, reason: "'..' in the path" };
  const base = path.resolve(root);
  const file = path.resolve(base, `.${path.posix.normalize(`/${segments.filter((s) => s !== '' && s !== '.').join('/')}`)}`);
  if (file !== base && !file.startsWith(base + path.sep)) return { status: 403, reason: 'outside the served folder' };
  return { file };
}

function send(res, status, body, type = 'text/plain; charset=utf-8', head = false, extra = undefined) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const buf = typeof body === 'string' ? Buffer.from(body) : body;
  res.writeHead(status, { ...SECURITY_HEADERS, ...extra, 'content-type': type, 'content-length': buf.length, 'cache-control': 'no-store' });
  res.end(head ? undefined : buf);
}

/** The file to serve for `file` (index.html of a folder), or null; never outside `realRoot`. */
async function findFile(file, realRoot) {
  let real;
  try {
    real = await fs.realpath(file);
  } catch {
    return null;
  }
  // a symlink under the root must not lead out of it
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return null;
  const st = await fs.stat(real);
  if (st.isDirectory()) return findFile(path.join(real, 'index.html'), realRoot);
  return st.isFile() ? real : null;
}

/** The CSP header with `opts.imageOrigins` and `opts.scriptSources` added, if any were given. */
function policyWith(opts) {
  const base = SECURITY_HEADERS['content-security-policy'];
  let p = base;
  if (opts.imageOrigins?.length) p = p.replace("img-src 'self' data: blob:", `img-src 'self' data: blob: ${opts.imageOrigins.join(' ')}`);
  if (opts.scriptSources?.length) p = p.replace("script-src 'self' 'wasm-unsafe-eval'", `script-src 'self' 'wasm-unsafe-eval' ${opts.scriptSources.join(' ')}`);
  return p === base ? undefined : { 'content-security-policy': p };
}

/**
 * A request handler `(req, res)` serving `root`. `opts.fallback(req, res)`: called for
 * requests it does not serve as files (e.g. a proxy), instead of 404; it must answer them.
 * Two exceptions, for a test that must load an image from another origin (to taint a canvas):
 * `opts.crossOrigin`, URL paths served with `Cross-Origin-Resource-Policy: cross-origin`
 * instead of same-origin (a page under COEP require-corp embeds nothing cross-origin without
 * it), and `opts.imageOrigins`, sources added to the CSP's img-src of every response.
 * One more for the benchmarks only: `opts.scriptSources`, sources added to script-src (TF.js's
 * threaded wasm build starts its workers with `importScripts` of a blob: URL, which the
 * package itself never needs). No page of the package or demo is served with it.
 */
export function staticHandler(root, opts = {}) {
  const base = path.resolve(root);
  const csp = policyWith(opts);
  let realRoot = null;
  return async (req, res) => {
    try {
      const head = req.method === 'HEAD';
      if (req.method !== 'GET' && !head) {
        send(res, 405, 'only GET and HEAD');
        return;
      }
      const r = resolvePath(base, req.url);
      if (!r.file) {
        send(res, r.status, `${r.status}: ${r.reason}`, undefined, head);
        return;
      }
      realRoot = realRoot || (await fs.realpath(base));
      const file = await findFile(r.file, realRoot);
      if (!file) {
        if (opts.fallback) {
          opts.fallback(req, res);
          return;
        }
        send(res, 404, 'not found', undefined, head);
        return;
      }
      const body = await fs.readFile(file);
      const pathname = req.url.split(/[?#]/, 1)[0];
      const extra = { ...csp, ...(opts.crossOrigin && opts.crossOrigin.includes(pathname) ? { 'cross-origin-resource-policy': 'cross-origin' } : undefined) };
      send(res, 200, body, MIME[path.extname(file).toLowerCase()] || 'application/octet-stream', head, extra);
    } catch {
      send(res, 500, 'internal error');
    }
  };
}

/**
 * Serves `root` on `opts.host` (default 127.0.0.1), port `opts.port` (0: any free one).
 * Resolves to `{ url, port, server, close() }`.
 */
export function startStaticServer(root, opts = {}) {
  const host = opts.host || '127.0.0.1';
  const handler = staticHandler(root, opts);
  // Requests Node's parser refuses (a malformed request line, headers over 16 KiB) are answered
  // by Node itself (400 / 431) without reaching the handler.
  const server = http.createServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port || 0, host, () => {
      const port = server.address().port;
      resolve({
        url: `http://${host}:${port}`,
        port,
        server,
        close: () =>
          new Promise((r) => {
            server.close(() => r());
            server.closeAllConnections?.();
          }),
      });
    });
  });
}
