// The tokenizer's own wasm module: `pixelgrad_text_bg.wasm` with its glue `pixelgrad_text.js`
// (crates/pixelgrad-text-web). The Hugging Face `tokenizers` crate lives there and not in the
// main module, which must stay under the 8 MiB Chrome lets a page instantiate synchronously on
// its main thread; it is fetched, compiled and instantiated on a page's first `pg.tokenizer`,
// needs neither `pg.init()` nor the main module, and is reused by later tokenizers.
//
// A Rust panic in it traps the instance (`WebAssembly.RuntimeError`), whose memory may then be
// half-updated, so a text instance is never called again once it trapped:
//
// - `callText(rec, what, f)` runs every call into the instance; a trap marks `rec` dead and
//   becomes a PixelgradError of kind 'panic' carrying the panic message (the panic handler hands
//   it over before the trap), never a bare RuntimeError (guard.js would take that for a crash
//   of the main module) and never a promise left pending.
// - Objects of the dead instance are detached (pointer zeroed, finalizer unregistered), so no
//   finalizer frees them in its memory later.
// - `liveText(what)` gives the current instance, replacing a dead one by a fresh one: each
//   instance has its own copy of the glue (the glue keeps its instance in module variables and
//   instantiates once), `pixelgrad_text.js?instance=N`, imported ahead so the replacement is a
//   synchronous `initSync` of the already compiled module (the module is small, so a page may
//   instantiate it on its main thread). The Tokenizer then makes itself again from its JSON.
import { PixelgradError } from './errors.js';

let compiled = null; // the WebAssembly.Module, compiled once
let loading = null; // the first load, then its settled promise
let current = null; // `{ id, ns, dead: null | { message, panic }, objects: Set<WeakRef> }`
let nextCopy = 1;
let spare = null; // a glue copy imported ahead, not instantiated yet
let spareLoading = null;
let spareError = null;
let instances = 0;

const text = (e) => (e && e.message ? e.message : String(e));

/** The module from `src`: a URL (fetched), its bytes, a Response or a compiled module. */
async function compileText(src) {
  if (src instanceof WebAssembly.Module) return src;
  if (src instanceof ArrayBuffer || ArrayBuffer.isView(src)) return WebAssembly.compile(/** @type {BufferSource} */ (src));
  const res = typeof Response !== 'undefined' && src instanceof Response ? src : await fetch(src instanceof URL ? src.href : src);
  if (!res.ok) throw new Error(`fetching ${res.url || src} gave HTTP ${res.status}`);
  const streaming = WebAssembly.compileStreaming && (res.headers.get('content-type') || '').startsWith('application/wasm');
  return streaming ? WebAssembly.compileStreaming(res) : WebAssembly.compile(await res.arrayBuffer());
}

/** Imports the next glue copy ahead (idempotent while one is loading or ready). */
function prepareSpare() {
  if (spare || spareLoading) return spareLoading || Promise.resolve();
  const url = new URL('./pixelgrad_text.js', import.meta.url);
  url.searchParams.set('instance', String(nextCopy++));
  spareLoading = import(/* @vite-ignore */ /* webpackIgnore: true */ url.href).then(
    (ns) => {
      spare = ns;
      spareError = null;
      spareLoading = null;
    },
    (e) => {
      spareError = text(e);
      spareLoading = null;
    },
  );
  return spareLoading;
}

/** Makes the instantiated glue copy `ns` the current text instance. */
function adopt(ns) {
  const rec = { id: instances++, ns, dead: null, objects: new Set() };
  ns.setErrorClass(PixelgradError.prototype);
  ns.setPanicHandler((message) => {
    console.error(`pixelgrad: internal error in the tokenizer module (please report): ${message}`);
    markDead(rec, { message: String(message), panic: true });
  });
  current = rec;
  return rec;
}

/** Marks `rec` dead (once) and detaches the objects made on it. */
function markDead(rec, info) {
  if (rec.dead) return;
  rec.dead = info;
  for (const ref of rec.objects) {
    const obj = ref.deref();
    if (obj && typeof obj.__destroy_into_raw === 'function') obj.__destroy_into_raw();
  }
  rec.objects.clear();
}

/**
 * The text module loaded (once; `wasmUrl` as `pg.loadWasm` takes it, used by the first call
 * only) and a live instance of it.
 * @param {{ wasmUrl?: string | URL | ArrayBuffer | Uint8Array | WebAssembly.Module | Response }} [opts]
 */
export async function textInstance(opts = {}) {
  if (!loading) {
    loading = (async () => {
      const src = opts.wasmUrl || new URL('pixelgrad_text_bg.wasm', import.meta.url);
      const [glue, module] = await Promise.all([import('./pixelgrad_text.js'), compileText(src)]);
      await glue.default({ module_or_path: module });
      compiled = module;
      adopt(glue);
      await prepareSpare();
    })().catch((e) => {
      loading = null;
      throw new PixelgradError(`tokenizer: could not load the tokenizer's wasm module (pixelgrad_text_bg.wasm): ${text(e)}`, {
        kind: 'unavailable',
        op: 'tokenizer',
      });
    });
  }
  await loading;
  if (current.dead && !spare) await prepareSpare();
  return liveText('tokenizer');
}

/**
 * The current text instance, a fresh one in place of a dead one (synchronously, from the glue
 * copy imported ahead). Throws kind 'instanceLost' when no copy is ready (two crashes in a row);
 * `await pg.tokenizer(...)` waits for one.
 */
export function liveText(what) {
  if (!current) throw new PixelgradError(`${what}: the tokenizer's wasm module is not loaded (await pg.tokenizer(json) first)`, { op: what });
  if (!current.dead) return current;
  if (!spare) {
    const why = spareError || 'its glue copy is still loading';
    throw new PixelgradError(`${what}: the tokenizer's wasm module crashed and a fresh instance is not ready (${why}); await pg.tokenizer(json) to wait for one`, {
      kind: 'instanceLost',
      op: what,
    });
  }
  const ns = spare;
  spare = null;
  try {
    ns.initSync({ module: compiled });
  } catch (e) {
    spareError = `instantiating a fresh copy failed: ${text(e)}`;
    throw new PixelgradError(`${what}: ${spareError}`, { kind: 'instanceLost', op: what });
  }
  const rec = adopt(ns);
  prepareSpare();
  return rec;
}

/**
 * `f()`, a call into text instance `rec`; a trap marks it dead and throws kind 'panic'. `obj`:
 * a glue object `f` returns, remembered so it can be detached if `rec` dies.
 * @template T
 * @param {{ ns: any, dead: null | { message: string, panic: boolean }, objects: Set<WeakRef<object>> }} rec
 * @param {string} what
 * @param {() => T} f
 * @returns {T}
 */
export function callText(rec, what, f) {
  let r;
  try {
    r = f();
  } catch (e) {
    if (!(e instanceof WebAssembly.RuntimeError)) throw e;
    markDead(rec, { message: `the wasm module trapped (${text(e)})`, panic: false });
    const d = /** @type {{ message: string, panic: boolean }} */ (rec.dead);
    const err = new PixelgradError(
      `${what}: the tokenizer's wasm module crashed (${d.panic ? `Rust panic: ${d.message}` : d.message}); it was discarded and the ` +
        'next call runs on a fresh instance. This is a bug: please report it with the message.',
      { kind: 'panic', op: what, panicMessage: d.message },
    );
    throw err;
  }
  return r;
}

/** Remembers glue object `obj` of `rec`, to detach it if `rec` dies. */
export function trackText(rec, obj) {
  if (rec.objects.size >= 64) for (const ref of rec.objects) if (!ref.deref()) rec.objects.delete(ref);
  rec.objects.add(new WeakRef(obj));
}

/** Frees glue object `obj` of `rec` (one of a dead instance was detached already). */
export function freeText(rec, obj, what) {
  if (rec.dead || !obj) return;
  for (const ref of rec.objects) if (ref.deref() === obj) rec.objects.delete(ref);
  callText(rec, what, () => obj.free());
}
