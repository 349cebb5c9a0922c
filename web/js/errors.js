// `PixelgradError`: every error the package throws or rejects with. A subclass of `Error` whose
// message is the engine's text unchanged, with the typed fields of the Rust error as data:
//
//   try { model.predict(pg.tensor(new Float32Array(20), [2, 10])); }
//   catch (e) { e instanceof pg.PixelgradError; e.kind; e.op; e.shapes; e.backend; }
//
// Errors made in Rust get this class's prototype at the boundary (`wasm.setErrorClass`, see
// crates/pixelgrad-web/src/wasm/error.rs); errors thrown by the JS wrapper are converted by
// guard.js, which wraps the public methods of the API classes once.

/** The op a message names: the text before its first `: ` (`fit: epochs must be ...` -> `fit`). */
function opOf(message) {
  const m = /^([A-Za-z_.][\w.]{0,39}): /.exec(message);
  return m ? m[1] : '';
}

/** @typedef {import('./index.js').PixelgradError} DeclaredPixelgradError index.d.ts's PixelgradError, which this class implements. */

/** @implements {DeclaredPixelgradError} */
export class PixelgradError extends Error {
  /**
   * `fields`: `{ kind, op, shapes, backend }`; `kind` defaults to 'invalid' (a bad argument),
   * `op` to the name before the message's first colon.
   */
  /**
   * @param {string} message
   * @param {{ kind?: string, op?: string, shapes?: number[][], backend?: string, panicMessage?: string, report?: { tried: import('./index.js').BackendTry[] } }} [fields]
   */
  constructor(message, fields = {}) {
    super(message);
    /**
     * 'invalid' | 'shape' | 'backend' | 'limit' | 'budget' | 'cancelled' | 'unavailable' |
     * 'deviceLost' | 'disposed' | 'panic' | 'instanceLost' | 'quota' | ... (index.d.ts lists them)
     */
    this.kind = fields.kind || 'invalid';
    /** The operation that failed, e.g. 'fit', 'predict', 'matmul'. */
    this.op = fields.op !== undefined ? fields.op : opOf(message);
    /** The input shapes involved, e.g. `[[2, 10]]` (empty where none). */
    this.shapes = fields.shapes || [];
    /** The backend's name, or '' where none was involved. */
    this.backend = fields.backend || '';
    /** Kinds 'panic' and 'instanceLost': the Rust panic message (or the trap) of the crash. */
    if (fields.panicMessage !== undefined) this.panicMessage = fields.panicMessage;
    /** `pg.init` failures: every backend tried and why it was refused. */
    if (fields.report !== undefined) this.report = fields.report;
  }

  /** `e` as a PixelgradError (itself if it already is one), the message unchanged. */
  static from(e, fields) {
    if (e instanceof PixelgradError) return e;
    const msg = e && typeof e.message === 'string' ? e.message : String(e);
    const out = new PixelgradError(msg, fields);
    if (e && e.stack) out.stack = e.stack;
    if (e && e.report) out.report = e.report;
    return out;
  }
}
Object.defineProperty(PixelgradError.prototype, 'name', { value: 'PixelgradError', writable: true, configurable: true });
