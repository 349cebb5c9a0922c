// Static files of the page server: GET and HEAD of files under one root folder, nothing else
// (other methods are 404, as a route that does not exist).
// A request path is decoded once and refused (400) if it does not decode, holds a NUL, a
// backslash or an encoded slash, or names `.` / `..` segments; a path that resolves outside the
// root (a symbolic link pointing out included) is 404, as is anything that is not a regular file.
// Errors answer the request; none is thrown.
import fs from 'node:fs';
import path from 'node:path';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ts': 'text/plain; charset=utf-8',
  '.csv': 'text/csv',
  '.txt': 'text/plain; charset=utf-8',
};

/** The decoded path segments of `url`, or null when the path is malformed. */
export function pathSegments(url) {
  if (typeof url !== 'string' || !url.startsWith('/')) return null;
  const raw = url.split(/[?#]/, 1)[0];
  if (/%2f|%5c/i.test(raw)) return null;
  let decoded;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segs = decoded.split('/').filter((s) => s !== '');
  if (segs.some((s) => s === '.' || s === '..')) return null;
  return segs;
}

function plain(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

/** A request handler serving the files under `root`. */
export function staticFiles(root) {
  const base = fs.realpathSync(path.resolve(root));
  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 404, `no route ${req.method} ${req.url.slice(0, 200)}`);
    const segs = pathSegments(req.url);
    if (!segs) return plain(res, 400, 'bad path');
    let file = path.join(base, ...segs);
    try {
      let st = await fs.promises.stat(file);
      if (st.isDirectory()) {
        file = path.join(file, 'index.html');
        st = await fs.promises.stat(file);
      }
      const real = await fs.promises.realpath(file);
      if (!st.isFile() || (real !== base && !real.startsWith(base + path.sep))) return plain(res, 404, 'not found');
      res.writeHead(200, {
        'content-type': MIME[path.extname(real).toLowerCase()] || 'application/octet-stream',
        'content-length': st.size,
        'cache-control': 'no-store',
      });
      if (req.method === 'HEAD') return res.end();
      const s = fs.createReadStream(real);
      s.on('error', () => res.destroy());
      s.pipe(res);
    } catch {
      if (!res.headersSent) plain(res, 404, 'not found');
      else res.destroy();
    }
  };
}
