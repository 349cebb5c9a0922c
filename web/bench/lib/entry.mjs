// The page's benchmark API, called by run.mjs through page.evaluate. One page hosts one
// (library, backend) pair so the libraries never share a GPU context or a WebGL canvas.

import { measure } from './measure.mjs';

let side = null;

window.pgBench = {
  /** Loads `lib` ('pixelgrad' | 'tfjs') and starts `backend`; returns { library, backend, adapter, initMs }. */
  async init(lib, backend) {
    const t0 = performance.now();
    if (lib === 'tfjs') side = await import('./tfjs.mjs');
    else if (lib === 'pixelgrad') side = await import('./pixelgrad.mjs');
    else throw new Error(`unknown library ${lib}`);
    const info = await side.init(backend);
    return { ...info, initMs: performance.now() - t0 };
  },
  /** Measures one workload on the started backend (see measure.mjs for `opts`). */
  async run(workload, opts) {
    if (!side) throw new Error('init first');
    const s = side.session(workload);
    try {
      return await measure(s, opts);
    } finally {
      try {
        s.dispose();
      } catch {
        // a failed run may leave half-built state; the page is closed after an error anyway
      }
    }
  },
};
window.pgBenchReady = true;
