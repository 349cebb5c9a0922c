// The HTTP security headers every page the project serves carries (the project's common set):
// a Content-Security-Policy that lets pages load only their own origin's scripts, styles,
// workers and wasm (`'wasm-unsafe-eval'` compiles WebAssembly, nothing else is evaluated) and
// connect only to their own origin (the page server forwards the Fleet API there), cross-origin
// isolation (COOP + COEP, which SharedArrayBuffer and so the threaded CPU backend need), and
// no MIME sniffing. The federated demo needs nothing beyond it.
export const SECURITY_HEADERS = Object.freeze({
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' blob: mediastream:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
});

/** Sets the security headers on `res` (before its head is written). */
export function secure(res) {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
  return res;
}
