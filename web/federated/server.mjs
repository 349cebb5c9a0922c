// The page server of a federation: serves web/ (the package and the demo) and forwards the
// Flower Fleet API (`POST /v1/fleet/<route>`) to a SuperLink, so pages reach the SuperLink on
// their own origin (the SuperLink sends no CORS headers). It has no federated-learning logic:
// the body and headers go through as they are; only hop-by-hop headers and `host` are
// rewritten, as any reverse proxy does.
//
// The SuperLink may be `https://`: its certificate is verified against the system's roots, or
// only against `--ca-file FILE` when given (the CA of a private deployment). Every page gets
// the security headers of ./security.mjs. Bounds: a forwarded request or answer body over
// `maxBody` bytes is cut off (413 for a request; an answer is aborted), and an exchange with
// the SuperLink that takes over `timeoutMs` is abandoned (504). Malformed paths are 400.
//
//   node web/federated/server.mjs --superlink https://HOST:9093 [--ca-file ca.pem] [--port 8090]
//
// or from code: `const s = await startPageServer({ superlink, caFile, port })` → `{ url, port, close }`.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { secure } from './security.mjs';
import { staticFiles } from './static.mjs';

/** The `web/` folder this file is in. */
export const webRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Largest forwarded body by default: a Fleet object is at most a 5 MiB chunk plus framing. */
export const DEFAULT_MAX_BODY = 16 * 1024 * 1024;
/** Longest exchange with the SuperLink by default (the node's own default is 120 s). */
export const DEFAULT_TIMEOUT_MS = 150_000;

const FLEET_ROUTE = /^\/v1\/fleet\/[a-z][a-z-]{0,63}$/;
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host']);

function json(res, status, detail) {
  if (res.headersSent) return res.destroy();
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ detail: `page server: ${detail}` }));
}

function forward(req, res, target, agentOpts, { maxBody, timeoutMs }) {
  if (req.method !== 'POST') return json(res, 405, `the Fleet API takes POST, not ${req.method}`);
  if (!FLEET_ROUTE.test(req.url)) return json(res, 404, 'no such Fleet route');
  const declared = Number(req.headers['content-length']);
  if (declared > maxBody) return json(res, 413, `request body of ${declared} bytes is over the ${maxBody}-byte limit`);
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k.toLowerCase())) headers[k] = v;
  const lib = target.protocol === 'https:' ? https : http;
  let done = false;
  const fail = (status, detail) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    up.destroy();
    json(res, status, detail);
  };
  const up = lib.request(
    {
      ...agentOpts,
      hostname: target.hostname,
      port: target.port,
      path: req.url,
      method: 'POST',
      headers: { ...headers, host: target.host },
    },
    (r) => {
      const out = {};
      for (const [k, v] of Object.entries(r.headers)) if (!HOP.has(k.toLowerCase())) out[k] = v;
      res.writeHead(r.statusCode, out);
      let n = 0;
      r.on('data', (chunk) => {
        n += chunk.length;
        if (n > maxBody) {
          done = true;
          clearTimeout(timer);
          up.destroy();
          res.destroy();
          return;
        }
        res.write(chunk);
      });
      r.on('end', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        res.end();
      });
      r.on('error', () => fail(502, 'the SuperLink broke off its answer'));
    },
  );
  const timer = setTimeout(() => fail(504, `the SuperLink at ${target.origin} did not answer within ${timeoutMs / 1000} s`), timeoutMs);
  up.on('error', (e) => {
    const tls = /CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|SSL|TLS/.test(`${e.code} ${e.message}`);
    fail(502, tls
      ? `TLS with the SuperLink at ${target.origin} failed (${e.code || e.message}); pass the CA that signed its certificate with --ca-file`
      : `the SuperLink at ${target.origin} is unreachable (${e.code || e.message})`);
  });
  let sent = 0;
  req.on('data', (chunk) => {
    sent += chunk.length;
    if (sent > maxBody) return fail(413, `request body is over the ${maxBody}-byte limit`);
    up.write(chunk);
  });
  req.on('end', () => up.end());
  req.on('error', () => fail(400, 'the request broke off'));
  res.on('close', () => {
    if (!done) {
      done = true;
      clearTimeout(timer);
      up.destroy();
    }
  });
}

/**
 * Starts the page server on 127.0.0.1; resolves to `{ url, port, close() }`. Options:
 * `superlink` (http:// or https:// origin of the SuperLink), `caFile` (PEM CA certificates
 * trusted for an https:// SuperLink instead of the system's), `port` (0 = any free one),
 * `root` (the folder served, default web/), `maxBody`, `timeoutMs`.
 */
export async function startPageServer({ superlink, caFile, port = 0, root = webRoot, maxBody = DEFAULT_MAX_BODY, timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
  const target = new URL(superlink);
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new Error(`page server: the SuperLink URL must be http:// or https:// (got ${superlink})`);
  }
  if (caFile && target.protocol !== 'https:') throw new Error('page server: --ca-file is for an https:// SuperLink');
  const agentOpts = caFile ? { ca: fs.readFileSync(caFile) } : {};
  const statics = staticFiles(root);
  const limits = { maxBody, timeoutMs };
  const server = http.createServer((req, res) => {
    secure(res);
    try {
      if (req.url.startsWith('/v1/fleet/')) return forward(req, res, target, agentOpts, limits);
      statics(req, res).catch(() => json(res, 500, 'internal error'));
    } catch {
      json(res, 500, 'internal error');
    }
  });
  server.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const p = server.address().port;
  return {
    url: `http://127.0.0.1:${p}`,
    port: p,
    close: async () => {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(() => r()));
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : dflt;
  };
  const superlink = opt('--superlink');
  if (!superlink) {
    console.error('usage: node web/federated/server.mjs --superlink https://HOST:PORT [--ca-file CA.pem] [--port P]');
    process.exit(2);
  }
  try {
    const s = await startPageServer({ superlink, caFile: opt('--ca-file'), port: Number(opt('--port', 0)) });
    console.log(`pixelgrad federation page: ${s.url}/demo/federated.html (Fleet API forwarded to ${superlink})`);
  } catch (e) {
    console.error(`error: ${e.message}`);
    process.exit(1);
  }
}
