// The page server of a federation: serves web/ (the package and the demo) and forwards the
// Flower Fleet API (`/v1/fleet/*`) to a SuperLink unchanged, so pages reach the SuperLink on
// their own origin (the SuperLink sends no CORS headers). It has no federated-learning logic:
// method, path, headers and body go through as they are; only hop-by-hop headers and `host`
// are rewritten, as any reverse proxy does.
//
//   node web/federated/server.mjs --superlink http://127.0.0.1:9093 [--port 8090]
//
// or from code: `const s = await startPageServer({ superlink, port })` → `{ url, port, close }`.
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startServer, webRoot } from '../tests/harness.mjs';

const FLEET = '/v1/fleet/';
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host']);

function forward(req, res, target) {
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k.toLowerCase())) headers[k] = v;
  const up = http.request(
    { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...headers, host: target.host } },
    (r) => {
      const out = {};
      for (const [k, v] of Object.entries(r.headers)) if (!HOP.has(k.toLowerCase())) out[k] = v;
      res.writeHead(r.statusCode, out);
      r.pipe(res);
    },
  );
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ detail: `page server: the SuperLink at ${target.origin} is unreachable (${e.code || e.message})` }));
  });
  req.pipe(up);
}

/** Starts the page server on 127.0.0.1; resolves to `{ url, port, close() }`. */
export async function startPageServer({ superlink, port = 0, root = webRoot } = {}) {
  const target = new URL(superlink);
  if (target.protocol !== 'http:') throw new Error(`page server: the SuperLink URL must be http:// (got ${superlink})`);
  const statics = await startServer(root, 0);
  // The static server's handler, reused for everything that is not the Fleet API.
  const staticUrl = new URL(statics.url);
  const server = http.createServer((req, res) => {
    if (req.url.startsWith(FLEET)) return forward(req, res, target);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: `page server: no route ${req.method} ${req.url}` }));
    }
    forward(req, res, staticUrl);
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
      await new Promise((r) => server.close(() => r()));
      server.closeAllConnections?.();
      await statics.close();
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
    console.error('usage: node web/federated/server.mjs --superlink http://HOST:PORT [--port P]');
    process.exit(2);
  }
  const s = await startPageServer({ superlink, port: Number(opt('--port', 0)) });
  console.log(`pixelgrad federation page: ${s.url}/demo/federated.html (Fleet API forwarded to ${superlink})`);
}
