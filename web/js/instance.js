// The wasm instance behind the package, and what happens when it crashes.
//
// A Rust panic aborts: the panic hook runs, then the instance traps (`WebAssembly.RuntimeError`)
// and its memory may be half-updated (a RefCell left borrowed, a pool mid-update). Such an
// instance is never used again:
//
// - The module is compiled once (`compiled`). Every instance gets its own copy of the
//   wasm-bindgen glue, because the glue keeps the instance, its memory views and the
//   FinalizationRegistries that free Rust objects in module-level variables, and its `init`
//   refuses to run twice. Re-initialising one glue copy would also let objects of the dead
//   instance (and their finalizers) free pointers in the new one's memory. So instance 0 is
//   `import('./pixelgrad_web.js')`, and each later one a fresh module record of the same file
//   (`pixelgrad_web.js?instance=N`), instantiated from the same compiled module with a new
//   memory. One copy is imported ahead, while loading, so that replacing a dead instance is
//   synchronous (`initSync`) and the call right after a crash already runs on a fresh one.
//   (Imports, not a static import: the host-only parts of the package load without the glue.)
//   Chrome refuses synchronous instantiation on the main thread of a module over 8 MiB
//   (a RangeError): the replacement is then asynchronous, like one whose
//   glue copy is still being imported, and synchronous calls until it is done throw kind
//   'instanceLost' saying to `await rt.recover()`. web/tests/package.test.mjs keeps the
//   single-threaded module under the limit, so recovery stays synchronous.
// - Each instance registers a panic handler (crates/pixelgrad-web/src/wasm/crash.rs) called
//   with the panic message before the trap; a `WebAssembly.RuntimeError` out of any call
//   (`isTrap`, seen by guard.js) marks it dead as well (traps that are not panics: out of
//   memory, out-of-bounds access).
// - `settle()` swaps a fresh instance in and tells the listeners (runtime.js restarts the
//   current runtime's backend on it, recovery.js). Calls in flight on the dead instance reject
//   with kind 'panic' (`inFlight`); objects made on it throw kind 'instanceLost'.
//
// The dead instance's memory is not returned to the browser: its glue copy stays in the
// module map until the page or worker goes away. A crash is a bug, so this is paid once per bug.
//
// Threads (threads.js): `loadWasm` loads the threaded build instead when the page is
// cross-origin isolated and more than one thread is asked for; its glue copies are made the
// same way, and a fresh instance gets fresh workers (the dead one's are ended).
import { PixelgradError } from './errors.js';
import { decided, plan, startWorkers, stopWorkers } from './threads.js';

/** The current instance's glue (its exports and classes), null until loaded; replaced after a crash. */
export let wasm = null;

let compiled = null;
let glueName = 'pixelgrad_web'; // or 'pixelgrad_web_threads': the build loaded
let threadCount = 1; // the threads the threaded build's instances run the CPU kernels on
let loading = null;
let nextCopy = 1;
let spare = null; // a glue copy imported ahead, not instantiated yet
let spareLoading = null;
let spareError = null;
let replacing = null; // a replacement waiting for its glue copy to be imported
let current = null;
let refuseSync = false; // test-only: the next synchronous instantiation fails as Chrome's limit makes it
const records = []; // every instance made; dead ones stay so objects can be attributed
const listeners = [];

/** True once the module is loaded. */
export function wasmLoaded() {
  return current !== null;
}

/** The current instance: `{ id, ns, dead: null | { message, panic } }`. */
export function currentInstance() {
  return current;
}

/** `listener(dead, fresh)` after a dead instance was replaced; a promise it returns is awaited by `ready()`. */
export function onReplaced(listener) {
  listeners.push(listener);
}

async function compileModule(src) {
  if (src instanceof WebAssembly.Module) return src;
  if (src instanceof ArrayBuffer || ArrayBuffer.isView(src)) return WebAssembly.compile(/** @type {BufferSource} */ (src));
  const res = typeof Response !== 'undefined' && src instanceof Response ? src : await fetch(src);
  if (!res.ok) throw new Error(`fetching ${res.url || src} gave HTTP ${res.status}`);
  const type = res.headers.get('content-type') || '';
  if (WebAssembly.compileStreaming && type.startsWith('application/wasm')) return WebAssembly.compileStreaming(res);
  return WebAssembly.compile(await res.arrayBuffer());
}

function glueUrl(n) {
  const u = new URL(`./${glueName}.js`, import.meta.url);
  if (n !== undefined) u.searchParams.set('instance', String(n));
  return u.href;
}

/** Instance 0's glue (static specifiers, so bundlers see both builds). */
function importGlue() {
  return glueName === 'pixelgrad_web_threads' ? import('./pixelgrad_web_threads.js') : import('./pixelgrad_web.js');
}

/** Imports the next glue copy ahead (idempotent while one is loading or ready). */
function prepareSpare() {
  if (spare || spareLoading) return spareLoading || Promise.resolve();
  const url = glueUrl(nextCopy++);
  spareLoading = import(/* @vite-ignore */ /* webpackIgnore: true */ url).then(
    (ns) => {
      spare = ns;
      spareError = null;
      spareLoading = null;
    },
    (e) => {
      spareError = e && e.message ? e.message : String(e);
      spareLoading = null;
    },
  );
  return spareLoading;
}

/** Makes glue copy `ns` (already instantiated) the current instance. */
function adopt(ns) {
  ns.setErrorClass(PixelgradError.prototype);
  const rec = { id: records.length, ns, dead: null, pending: new Set() };
  ns.setPanicHandler((message) => markDead(rec, { message: String(message), panic: true }));
  records.push(rec);
  current = rec;
  wasm = ns;
  return rec;
}

/**
 * Loads, compiles and instantiates the module once (`wasmUrl`: where the .wasm is fetched
 * from, or its bytes, or a compiled `WebAssembly.Module`), and imports the glue copy a crash
 * would use.
 */
export function loadWasm(opts = {}) {
  if (!loading) {
    const p = plan(opts);
    loading = (async () => {
      if (p.build === 'threaded') {
        try {
          return await loadBuild('pixelgrad_web_threads', new URL('pixelgrad_web_threads_bg.wasm', import.meta.url).href, p.requested, p);
        } catch (e) {
          // No threaded build next to the package (built without --threads), or it failed to
          // start: the single-threaded one, and the report says why.
          stopWorkers();
          current = null;
          wasm = null;
          p.build = 'single';
          p.reason = `the threaded build could not start (${e && e.message ? e.message : e}); running on one thread`;
        }
      }
      const src = opts.wasmUrl instanceof URL ? opts.wasmUrl.href : opts.wasmUrl || new URL('pixelgrad_web_bg.wasm', import.meta.url).href;
      return loadBuild('pixelgrad_web', src, 1, p);
    })().catch((e) => {
      loading = null;
      throw new Error(`pixelgrad: could not load the wasm module: ${e && e.message ? e.message : e}`);
    });
  }
  return loading;
}

/** Loads build `name` from `src` and, for the threaded one, starts its `count - 1` workers. */
async function loadBuild(name, src, count, p) {
  // a copy of the other build's glue imported ahead must not be used for this one
  if (spareLoading) await spareLoading;
  glueName = name;
  threadCount = count;
  spare = null;
  spareError = null;
  const [glue, module] = await Promise.all([importGlue(), compileModule(src), prepareSpare()]);
  compiled = module;
  await glue.default({ module_or_path: compiled });
  adopt(glue);
  if (count > 1) await startWorkers(glue, compiled, glueUrl(), count);
  decided(p);
  return glue;
}

/** True for an error that means the instance trapped (a panic, or any other wasm trap). */
export function isTrap(e) {
  return typeof WebAssembly !== 'undefined' && e instanceof WebAssembly.RuntimeError;
}

/** Marks `rec` dead (once): calls in flight on it reject, and the next call replaces it. */
function markDead(rec, info) {
  if (!rec || rec.dead) return;
  rec.dead = { message: info.message, panic: info.panic };
  const pending = [...rec.pending];
  rec.pending.clear();
  for (const p of pending) p.reject(crashError(rec, p.what));
  if (rec === current) queueMicrotask(settle);
}

/** A trap `e` came out of a call into `rec` (the current instance when omitted). */
export function noteTrap(e, rec = current) {
  markDead(rec, { message: `the wasm module trapped (${e && e.message ? e.message : e})`, panic: false });
}

/** The glue object `obj`'s instance, or null when it is not a glue object. */
export function ownerOf(obj) {
  const C = obj && obj.constructor;
  if (!C || !C.name) return null;
  for (const r of records) if (r.ns[C.name] === C) return r;
  return null;
}

/** True when glue object `obj` belongs to a discarded instance. */
export function isDeadObject(obj) {
  const r = ownerOf(obj);
  return !!(r && r.dead);
}

/**
 * Frees glue object `obj`. One of a dead instance is only detached (its pointer zeroed and its
 * finalizer unregistered), so nothing calls into that instance's memory again.
 */
export function release(obj) {
  if (!obj) return;
  const rec = ownerOf(obj);
  if (rec && rec.dead) {
    try {
      if (typeof obj.__destroy_into_raw === 'function') obj.__destroy_into_raw();
    } catch {
      // nothing to detach
    }
    return;
  }
  try {
    obj.free();
  } catch (e) {
    // freed twice is harmless; a trap is a crash like any other
    if (isTrap(e)) noteTrap(e, rec || current);
  }
}

function crashText(rec) {
  const d = rec.dead;
  return d.panic ? `Rust panic: ${d.message}` : d.message;
}

/** The error of a call that crashed instance `rec` (kind 'panic'). */
export function crashError(rec, what) {
  const e = new PixelgradError(
    `${what ? `${what}: ` : ''}the wasm module crashed (${crashText(rec)}); it was discarded and the next call runs on a fresh instance ` +
      "(objects made before the crash throw kind 'instanceLost'). This is a bug: please report it with the message.",
    { kind: 'panic', op: what },
  );
  e.panicMessage = rec.dead.message;
  return e;
}

/** The error for using, in `what`, an object of the discarded instance `rec` (kind 'instanceLost'). */
export function instanceLostError(rec, what) {
  const e = new PixelgradError(
    `${what}: this object belonged to a wasm instance that was discarded after a crash (${crashText(rec)}); ` +
      'create it again (models saved to IndexedDB and fit autosaves survive, load them again)',
    { kind: 'instanceLost', op: what },
  );
  e.panicMessage = rec.dead.message;
  return e;
}

/** The instance with id `id` (objects remember the id they were made on). */
export function instanceById(id) {
  return records[id] || null;
}

/**
 * The calls in flight on `rec` (`{ what, reject }`, added and removed by guard.js): when `rec`
 * dies, each is rejected with the crash error.
 */
export function inFlight(rec) {
  return rec.pending;
}

/**
 * Test-only: the next synchronous replacement fails with the RangeError Chrome throws for a
 * module over 8 MiB, so the asynchronous path is tested with the module we have.
 */
export function refuseNextSyncInstance() {
  refuseSync = true;
}

/** Glue copy `ns` instantiated synchronously (throws where the browser refuses that). */
function instantiate(ns) {
  if (refuseSync) {
    refuseSync = false;
    throw new RangeError('WebAssembly.Instance is disallowed on the main thread, if the buffer size is larger than 8MB (simulated)');
  }
  ns.initSync({ module: compiled });
  return started(ns);
}

/** Glue copy `ns` instantiated asynchronously (no size limit). */
async function instantiateAsync(ns) {
  await ns.default({ module_or_path: compiled });
  return started(ns);
}

/** The freshly instantiated copy `ns` made current, with workers of its own. */
function started(ns) {
  const rec = adopt(ns);
  // The dead instance's workers share its memory: fresh ones for the fresh instance (its
  // CPU kernels run on one thread until they have started).
  if (threadCount > 1) startWorkers(ns, compiled, glueUrl(), threadCount).catch(() => stopWorkers());
  return rec;
}

function replaced(dead, fresh) {
  const waits = [];
  for (const l of listeners) {
    const r = l(dead, fresh);
    if (r && typeof r.then === 'function') waits.push(r);
  }
  return waits.length ? Promise.allSettled(waits) : null;
}

let settling = null; // what `ready()` waits for: an import of a glue copy, or listeners' restarts

function track(p) {
  if (!p) return;
  settling = p;
  p.finally(() => {
    if (settling === p) settling = null;
  });
}

/**
 * After a crash: a fresh instance in place of the dead current one (synchronously when a glue
 * copy was imported ahead), and the listeners told. Called before every public call and once
 * right after a crash; does nothing while the current instance is alive.
 */
export function settle() {
  if (!current || !current.dead || replacing) return;
  const dead = current;
  if (spare) {
    const ns = spare;
    spare = null;
    let fresh;
    try {
      fresh = instantiate(ns);
    } catch (e) {
      // refused synchronously (a module over Chrome's limit): the same copy, asynchronously
      replaceAsync(dead, ns, e);
      return;
    }
    prepareSpare();
    track(replaced(dead, fresh));
    return;
  }
  // No copy ready (the import ahead failed or is still loading): replace asynchronously.
  replaceAsync(dead, null, null);
}

/**
 * Replaces `dead` asynchronously with glue copy `ns` (the next spare one when null); `syncError`
 * is why the synchronous way was refused, kept for the error if this fails too.
 */
function replaceAsync(dead, ns, syncError) {
  replacing = (async () => {
    let copy = ns;
    if (!copy) {
      await prepareSpare();
      if (!spare) throw new Error(spareError || 'no glue copy');
      copy = spare;
      spare = null;
    }
    const fresh = await instantiateAsync(copy);
    prepareSpare();
    await replaced(dead, fresh);
  })()
    .catch((e) => {
      const why = e && e.message ? e.message : String(e);
      spareError = syncError ? `instantiating a fresh copy failed: ${syncError.message}; then asynchronously: ${why}` : why;
    })
    .finally(() => {
      replacing = null;
    });
  track(replacing);
}

/** A promise while a replacement (or the restart of a runtime on it) is in flight, else null. */
export function ready() {
  return replacing || settling;
}

/**
 * Why the current instance cannot be replaced, or null: the glue copy could not be imported
 * (a bundle that does not ship `pixelgrad_web.js` next to `index.js`) or instantiated.
 */
export function replaceFailure() {
  return current && current.dead && !replacing ? spareError || 'no fresh instance yet' : null;
}
