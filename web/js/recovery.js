// Context and device loss. A WebGL2 context can be lost at any time (the browser reclaims the
// GPU, a driver resets, too many contexts), and so can a WebGPU device; everything on the GPU is
// then gone. Here:
//
// - `watch(rt, canvas)` listens for `webglcontextlost` / `webglcontextrestored` on the WebGL
//   canvas (preventDefault, so the browser may restore it); WebGPU's `GPUDevice.lost` is
//   listened to by the engine (wgpu's lost callback) and read through `inner.lostReason`.
// - `simulateLoss(rt)`: the test hook (WebGL: WEBGL_lose_context, restored again shortly after
//   as a browser would; WebGPU: `device.destroy()`).
// - `recoverRuntime(rt)` starts a backend again and swaps it into the same Runtime object, so
//   the user's `rt` keeps working: the same backend when it comes back (WebGL: the restored
//   context, else a new one), else the next one in the `auto` order (webgpu, webgl, cpu). Each
//   swap starts a new generation; objects made on an older one throw a `deviceLost` error.
// - `restartAfterCrash(rt)`: after a wasm crash (instance.js) the runtime's backend is started
//   again the same way on the fresh instance, synchronously where the backend allows it.
import { PixelgradError } from './errors.js';
import { isDeadObject, isTrap, noteTrap } from './instance.js';
import { startBackend, startBackendSync } from './backends.js';
import { noteLoss } from './videoinput.js';

const ORDER = ['webgpu', 'webgl', 'webgl1', 'cpu'];

/** How long recovery waits for a lost WebGL context to be restored before making a new one. */
export const RESTORE_WAIT_MS = 2000;

/** Attaches the loss listeners for `rt`'s current backend (`canvas`: the WebGL canvas, if any). */
export function watch(rt, canvas, gl) {
  rt._lostEvent = null;
  rt._restored = null;
  rt._loseExt = gl ? gl.getExtension('WEBGL_lose_context') : null;
  if (!canvas || typeof canvas.addEventListener !== 'function') return;
  const gen = rt._gen;
  let restoredResolve;
  // resolves when the browser gives the context back (recovery waits for it a while)
  rt._restored = new Promise((r) => {
    restoredResolve = r;
  });
  canvas.addEventListener('webglcontextlost', (e) => {
    if (rt._gen !== gen) return;
    // Without preventDefault the browser never restores the context.
    e.preventDefault();
    rt._lostEvent = { reason: `webglcontextlost${e.statusMessage ? `: ${e.statusMessage}` : ''}`, at: Date.now() };
    if (rt._simulated && rt._loseExt) {
      const ext = rt._loseExt;
      const ms = rt._simulated.restoreAfterMs;
      rt._simulated = null;
      if (ms !== null) setTimeout(() => ext.restoreContext(), ms);
    }
  });
  canvas.addEventListener('webglcontextrestored', () => {
    if (rt._gen === gen) restoredResolve(true);
  });
}

/**
 * After a loss: the lost device's objects (the runtime's, its models' and tensors') delete
 * nothing from now on, since a restored WebGL context has a new generation of objects.
 */
export function abandon(rt) {
  if (isDeadObject(rt._inner)) return;
  try {
    rt._inner.abandon();
  } catch (e) {
    if (isTrap(e)) noteTrap(e);
  }
}

/** Why `rt`'s device is gone, or null while it works (or while its instance is being replaced). */
export function lostReason(rt) {
  if (rt._lostEvent) return rt._lostEvent.reason;
  if (isDeadObject(rt._inner)) return null;
  try {
    return rt._inner.lostReason || null;
  } catch (e) {
    if (isTrap(e)) {
      noteTrap(e);
      return null;
    }
    return 'the runtime was freed';
  }
}

/**
 * The test hook behind `rt.simulateContextLoss(opts)`. WebGL: `WEBGL_lose_context.loseContext()`,
 * restored after `opts.restoreAfterMs` (default 50; `null`: never, so recovery moves on to a new
 * context); WebGPU: `device.destroy()`. `opts.permanent`: the backend will not start again in
 * this runtime either (as when the GPU process is gone), so recovery moves on to the next one in
 * the auto order. The CPU cannot be lost (an error).
 */
export function simulateLoss(rt, opts = {}) {
  if (opts.permanent && rt.backend !== 'cpu') rt._gone = rt.backend;
  if (rt.backend === 'webgl' || rt.backend === 'webgl1') {
    if (!rt._loseExt) throw new PixelgradError('simulateContextLoss: this WebGL context has no WEBGL_lose_context extension', { kind: 'unavailable', backend: rt.backend });
    rt._simulated = { restoreAfterMs: opts.permanent ? null : opts.restoreAfterMs === undefined ? 50 : opts.restoreAfterMs };
    rt._loseExt.loseContext();
    return;
  }
  if (rt.backend === 'webgpu') {
    rt._inner.destroyDevice();
    return;
  }
  throw new PixelgradError(`simulateContextLoss: the ${rt.backend} backend has no device to lose`, { kind: 'invalid', backend: rt.backend });
}

/** The error for using an object of runtime generation `gen` (or a lost current one) in `what`. */
export function lostError(rt, what, gen) {
  const why = gen !== undefined && gen !== rt._gen
    ? `it was made on the ${rt._history[gen] || rt.backend} device that was lost (the runtime now runs ${rt.backend})`
    : `the ${rt.backend} device was lost (${lostReason(rt)})`;
  return new PixelgradError(
    `${what}: ${why}; create tensors again, and restore models with \`await model.restore()\` (their last checkpoint)`,
    { kind: 'deviceLost', op: what, backend: rt.backend },
  );
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Starts a backend again after a loss and swaps it into `rt`. Resolves to
 * `{ backend, tried: [{ backend, ok, reason }] }`; rejects when nothing could start.
 * Concurrent callers share one recovery.
 */
export function recoverRuntime(rt) {
  if (!rt._recovering) {
    rt._recovering = doRecover(rt).finally(() => {
      rt._recovering = null;
    });
  }
  return rt._recovering;
}

async function doRecover(rt) {
  const lost = rt.backend;
  const tried = [];
  noteLoss(rt);
  abandon(rt);
  rt._freeInner();
  const candidates = [lost, ...ORDER.slice(ORDER.indexOf(lost) + 1).filter((b) => b !== lost)];
  for (const name of candidates) {
    let started = null;
    if (rt._gone === name) {
      tried.push({ backend: name, ok: false, reason: 'gone for good (simulateContextLoss({ permanent: true }))' });
      continue;
    }
    try {
      if (name === 'webgl' && lost === 'webgl' && rt._restored) {
        // the same context, once the browser gives it back
        const back = await Promise.race([rt._restored, sleep(RESTORE_WAIT_MS).then(() => false)]);
        if (back && rt._keep && !rt._keepGl.isContextLost()) {
          started = await startBackend('webgl', { canvas: rt._keep, gl: rt._keepGl, low: rt._low, emulate: rt._emulate });
        } else {
          tried.push({ backend: 'webgl', ok: false, reason: `the lost context was not restored within ${RESTORE_WAIT_MS} ms` });
        }
      }
      if (!started) started = await startBackend(name, { low: rt._low && name === 'webgl', emulate: rt._emulate });
    } catch (e) {
      tried.push({ backend: name, ok: false, reason: e && e.message ? e.message : String(e) });
      continue;
    }
    tried.push({ backend: name, ok: true, reason: started.inner.name });
    rt._swap(started, { lost, tried });
    return { backend: name, tried };
  }
  throw new PixelgradError(
    `recover: no backend could start after the ${lost} device was lost (${tried.map((t) => `${t.backend}: ${t.reason}`).join('; ')})`,
    { kind: 'deviceLost', op: 'recover', backend: lost },
  );
}

/**
 * After the wasm instance of `rt` crashed and `fresh` replaced it (instance.js): starts the
 * same backend (else the next in the auto order) on the fresh instance and swaps it into `rt`,
 * so the user's runtime keeps working. Synchronous for cpu, webgl and webgl1, so the call right
 * after the crash already runs; WebGPU starts asynchronously (`rt._restarting`, which async
 * calls wait for). WebGL gets a new context; the old one is lost on purpose, which frees its
 * textures. A crash while restarting is not retried (no endless loop on a backend that crashes
 * as it starts): `rt` then says to call `pg.init()` again.
 */
export function restartAfterCrash(rt, dead, fresh) {
  if (dead.restarting) {
    rt._restartFailed = `the fresh instance crashed too while the backend was starting (${dead.dead.message})`;
    return null;
  }
  fresh.restarting = true;
  const lost = rt.backend;
  const crash = dead.dead.message;
  releaseDeadDevice(rt);
  const tried = [];
  const candidates = [lost, ...ORDER.slice(ORDER.indexOf(lost) + 1).filter((b) => b !== lost && rt._gone !== b)];
  const done = (started, name) => {
    tried.push({ backend: name, ok: true, reason: started.inner.name });
    rt._swap(started, { lost, tried, crash });
    fresh.restarting = false;
    return { backend: name, tried };
  };
  for (let i = 0; i < candidates.length; i++) {
    const name = candidates[i];
    let started;
    try {
      started = startBackendSync(name, { low: rt._low && name === 'webgl', emulate: rt._emulate });
    } catch (e) {
      if (isTrap(e) || fresh.dead) {
        rt._restartFailed = `${name} crashed while starting: ${fresh.dead ? fresh.dead.message : e.message}`;
        return null;
      }
      tried.push({ backend: name, ok: false, reason: e && e.message ? e.message : String(e) });
      continue;
    }
    if (started) {
      done(started, name);
      return null;
    }
    // from here on asynchronously (WebGPU, or WebGL at low precision)
    rt._restarting = (async () => {
      for (const next of candidates.slice(i)) {
        try {
          return done(await startBackend(next, { low: rt._low && next === 'webgl', emulate: rt._emulate }), next);
        } catch (e) {
          if (isTrap(e) || fresh.dead) {
            rt._restartFailed = `${next} crashed while starting: ${fresh.dead ? fresh.dead.message : e.message}`;
            return null;
          }
          tried.push({ backend: next, ok: false, reason: e && e.message ? e.message : String(e) });
        }
      }
      rt._restartFailed = `no backend could start: ${tried.map((t) => `${t.backend}: ${t.reason}`).join('; ')}`;
      return null;
    })().finally(() => {
      rt._restarting = null;
    });
    return rt._restarting;
  }
  rt._restartFailed = `no backend could start: ${tried.map((t) => `${t.backend}: ${t.reason}`).join('; ')}`;
  return null;
}

/**
 * Lets the browser reclaim what the crashed instance's device held: a WebGL context is lost
 * through WEBGL_lose_context (from JavaScript); a WebGPU device is destroyed, the one call made
 * into a dead instance, guarded (it may trap again; that instance is never used otherwise).
 */
function releaseDeadDevice(rt) {
  if (rt._keepGl) {
    const ext = rt._loseExt || rt._keepGl.getExtension('WEBGL_lose_context');
    rt._keepGl = null;
    rt._keep = null;
    try {
      if (ext) ext.loseContext();
    } catch {
      // already lost
    }
  } else if (rt.backend === 'webgpu') {
    try {
      rt._inner.destroyDevice();
    } catch {
      // the dead instance trapped again; nothing else to release
    }
  }
}
