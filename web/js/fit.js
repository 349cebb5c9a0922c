// The page's driver of the native training loop behind `model.fit`: `pixelgrad_nn::train`'s
// state machine (through `wasm.FitRun`) decides everything a training run decides (batch
// order, when to read loss and accuracy back, when to take a host checkpoint (every
// `checkpointEvery` steps; default 20, then chosen once from the measured costs), the stop on a
// non-finite loss with the last good checkpoint restored, going back to the last checkpoint
// after a device loss and redoing the steps since, and the history), the same as native `fit`.
// What stays here is what only a page has:
//
// - the reads: the run says `read` where native code would block; the values are read back
//   asynchronously (WebGPU `mapAsync`, WebGL fences) and fed back; between steps the loop
//   yields to the event loop so a page stays responsive, and paces steps (`maxStepsPerSecond`);
// - callbacks: `onBatchEnd(step, logs)` after each read (returning 'step' asks for a read after
//   the next step too), `onEpochEnd(epoch, logs)`, `onDeviceLost(info)` once per loss, after the
//   restore and before training goes on; `model.stopTraining` ends the epoch after the current
//   step (logged with its means so far);
// - restarting a lost backend (recovery.js: `rt.lost`, or a `deviceLost` error): the runtime
//   starts a backend again, the model is rebuilt on it and handed to the run, which restores
//   its last checkpoint there;
// - `signal` (an AbortSignal): checked before every step and after every await; an abort stops
//   training there and rejects with kind 'cancelled' (the model keeps the weights of the last
//   step and stays usable). Every step is one synchronous call into wasm, during which no
//   abort event can run, so the check between steps is the cancel token's next check;
// - IndexedDB: `autosave` every `autosaveEvery` steps (at a checkpoint) and `resume` (autosave.js).
import { wasm } from './runtime.js';
import { PixelgradError } from './errors.js';
import { instanceLostError, isDeadObject, ownerOf, release } from './instance.js';
import { signalOption, throwIfAborted } from './signal.js';
import { abandon, recoverRuntime } from './recovery.js';
import { registry } from './tensor.js';
import { loadCheckpoint, recordName, saveCheckpoint } from './autosave.js';
import { requestPersistence } from './storage.js';
import { pacer } from './pacing.js';

/** Yields one macrotask (MessageChannel is not throttled like setTimeout). */
export function yieldNow() {
  return /** @type {Promise<void>} */ (new Promise((resolve) => {
    if (typeof MessageChannel !== 'undefined') {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => {
        ch.port1.close();
        resolve();
      };
      ch.port2.postMessage(null);
    } else {
      setTimeout(resolve, 0);
    }
  }));
}

/** `v` if it is a positive integer, `dflt` if undefined; else a PixelgradError naming `what`. */
export function positiveInt(v, dflt, what) {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < 1) throw new PixelgradError(`${what} must be a positive integer, got ${v}`);
  return v;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

function isLost(model, e) {
  if (e && e.kind === 'deviceLost') return true;
  const rt = model._rt;
  return !!(rt && rt.backend !== 'cpu' && rt.lost);
}

/** A checkpoint as users see it (`model.lastCheckpoint`); `state`: the run's, to resume. */
function wrapCheckpoint(host, state) {
  return {
    step: host.step,
    bytes: host.bytes,
    isFinite: host.isFinite,
    /** `{ name: Float32Array }` of every parameter and buffer. */
    weights: () => {
      if (isDeadObject(host)) throw instanceLostError(ownerOf(host), 'checkpoint.weights');
      return host.weights();
    },
    _host: host,
    _state: state,
  };
}

/** @internal `model.checkpoint()`: a checkpoint of `model` after `step` steps. */
export async function takeCheckpoint(model, step, state = null) {
  const net = model._net('checkpoint');
  const host = await net.checkpoint(step);
  const prev = model._lastCheckpoint;
  if (!host.isFinite && prev && prev.isFinite) {
    // never replace good weights by NaN or infinite ones: the caller hears of it
    release(host);
    return null;
  }
  model._lastCheckpoint = wrapCheckpoint(host, state);
  if (prev && prev._host !== host) release(prev._host);
  return model._lastCheckpoint;
}

/** Frees the model's wasm network (after a loss: it lives on the lost device). */
function dropNet(model) {
  const old = model._inner;
  model._inner = null;
  if (old) {
    if (registry) registry.unregister(model);
    release(old);
  }
}

/** @internal Rebuilds `model` on its runtime's current device (compiled as it was). */
function rebuild(model) {
  dropNet(model);
  const net = model._net('restore');
  if (model._compile) model.compile(model._compile);
  return net;
}

/** @internal `model.restore(checkpoint)`. */
export async function restoreModel(model, checkpoint) {
  if (model._disposed) throw new PixelgradError('restore: the model was disposed', { kind: 'disposed' });
  const ck = checkpoint || model._lastCheckpoint;
  if (!ck || !ck._host) throw new PixelgradError('restore: the model has no checkpoint (fit takes them; or call model.checkpoint())');
  // a checkpoint (or model) of a crashed instance is gone with its memory
  if (isDeadObject(ck._host)) throw instanceLostError(ownerOf(ck._host), 'restore');
  if (model._inner && isDeadObject(model._inner)) throw instanceLostError(ownerOf(model._inner), 'restore');
  const rt = model._rt;
  if (rt && rt.lost) {
    abandon(rt);
    dropNet(model);
    await recoverRuntime(rt);
  }
  let net;
  if (!model._inner || model._gen !== model._rt._gen) {
    net = rebuild(model);
  } else {
    net = model._net('restore');
  }
  net.restore(ck._host);
  model._lastCheckpoint = ck;
  return { step: ck.step, backend: model._rt.backend };
}

/** Host values as a Float32Array (no copy when they are one). */
function f32(v) {
  return v instanceof Float32Array ? v : Float32Array.from(v);
}

/** @internal `model.fit(x, y, opts)`. */
export async function fitLoop(model, x, y, opts = {}) {
  let net = model._net('fit');
  if (!model._compile) throw new PixelgradError('fit: the model is not compiled; call model.compile({ optimizer, loss }) first');
  if (model._fitting) throw new PixelgradError('fit: this model is already training');
  const epochs = positiveInt(opts.epochs, 1, 'fit: epochs');
  const batchSize = positiveInt(opts.batchSize, 32, 'fit: batchSize');
  const readEvery = positiveInt(opts.readEvery, 10, 'fit: readEvery');
  const every = opts.checkpointEvery === undefined || opts.checkpointEvery === null ? null : opts.checkpointEvery;
  if (every !== null && !(Number.isInteger(every) && every >= 0)) {
    throw new PixelgradError(`fit: checkpointEvery must be a whole number of steps (0: no checkpoints), got ${every}`);
  }
  const checkpoints = every !== 0;
  const stopOnNaN = opts.stopOnNaN !== false;
  const shuffle = opts.shuffle !== false;
  const seed = (opts.seed || 0) >>> 0;
  const cbs = opts.callbacks || {};
  const onBatchEnd = opts.onBatchEnd || cbs.onBatchEnd;
  const onEpochEnd = opts.onEpochEnd || cbs.onEpochEnd;
  const onDeviceLost = opts.onDeviceLost || cbs.onDeviceLost;
  const pace = pacer(opts.maxStepsPerSecond, 'fit');
  const maxRecoveries = opts.maxRecoveries === undefined ? 5 : opts.maxRecoveries;
  const autosave = opts.autosave ? recordName(opts.autosave, 'fit: autosave') : null;
  const autosaveEvery = positiveInt(opts.autosaveEvery, 500, 'fit: autosaveEvery');
  const resume = opts.resume ? recordName(opts.resume, 'fit: resume') : null;
  if (autosave && every === 0) throw new PixelgradError('fit: autosave needs checkpoints (checkpointEvery must not be 0)');
  const signal = signalOption(opts.signal, 'fit');
  throwIfAborted(signal, 'fit', 'before the first step');
  // autosave on: ask once for persistent storage; not awaited (a browser may ask the user)
  let persisted = null;
  if (autosave) {
    requestPersistence().then((v) => {
      persisted = v;
    });
  }
  const { n, xv, xdev, yv, yshape, sample } = await model._xy(x, y, 'fit', true);
  const withAcc = net.hasAccuracy(yshape);
  // the validation set is evaluated by the run after each epoch (as `model.evaluate` would)
  const val = opts.validationData ? await model._xy(opts.validationData[0], opts.validationData[1], 'evaluate') : null;
  const total = epochs * Math.ceil(n / batchSize);
  const schedule = { n, batchSize, epochs, shuffle, seed, readEvery };
  const runOpts = JSON.stringify({ epochs, batchSize, readEvery, shuffle, seed, checkpointEvery: every, stopOnNaN });
  const losses = [];
  let stopped = null;
  let resumedFrom = null;
  let single = false; // onBatchEnd asked for one step at a time (step-through)
  let saveDue = false;
  let ending = false;
  let seenCheckpoints = 0;
  let savedAt = 0;
  let run = null;
  const lost = () => model._rt.backend !== 'cpu' && model._rt.lost;
  const lostError = () =>
    new PixelgradError(`fit: the ${model._rt.backend} device was lost (${model._rt.lost})`, { kind: 'deviceLost', op: 'fit', backend: model._rt.backend });
  // the run's last good checkpoint as `model.lastCheckpoint`, whenever the run took one
  const noteCheckpoint = () => {
    const k = run.checkpointsTaken;
    if (k === seenCheckpoints) return;
    seenCheckpoints = k;
    const host = run.lastCheckpoint();
    if (!host) return;
    const prev = model._lastCheckpoint;
    model._lastCheckpoint = wrapCheckpoint(host, null);
    if (prev) release(prev._host);
  };
  const save = async () => {
    await saveCheckpoint(autosave, model, model._lastCheckpoint, schedule, JSON.parse(run.resumeState()));
    savedAt = model._lastCheckpoint.step;
  };

  model._fitting = true;
  model.stopTraining = false;
  try {
    await net.readTrain(); // drop sums a failed earlier call may have left
    let saved = null;
    if (resume) {
      saved = await loadCheckpoint(resume, model, schedule);
      if (saved) resumedFrom = saved.step;
    }
    const [vx, vshape, vy, vyshape] = val ? [val.xv, [val.n, ...val.sample], f32(val.yv), val.yshape] : [];
    const [savedCk, savedState] = saved ? [saved.host, JSON.stringify(saved.state)] : [];
    run = xdev
      ? wasm.FitRun.rows(net, xdev, f32(yv), yshape, vx, vshape, vy, vyshape, runOpts, savedCk, savedState)
      : wasm.FitRun.host(net, xv, [n, ...sample], f32(yv), yshape, vx, vshape, vy, vyshape, runOpts, savedCk, savedState);
    savedAt = run.step;
    for (;;) {
      throwIfAborted(signal, 'fit', `after ${run.step} of ${total} steps`);
      if (model.stopTraining && !ending) {
        ending = true;
        run.endHere();
      }
      if (lost()) {
        // noticed between two pieces of work: the run handles it as a failed step or read
        run.fail(String(model._rt.lost));
      } else if (run.stepsNext) {
        model._rt._check('fit', model._gen);
        await pace.wait();
        throwIfAborted(signal, 'fit', `after ${run.step} of ${total} steps`);
      }
      const ev = run.next(net);
      if (ev.type === 'step') {
        if (single) run.requestRead();
        if (autosave && ev.step - savedAt >= autosaveEvery) {
          run.requestCheckpoint();
          saveDue = true;
        }
        if (model.stopTraining && !ending) {
          ending = true;
          run.endHere();
        }
        await yieldNow();
      } else if (ev.type === 'read') {
        let values = null;
        try {
          values = await run.read();
        } catch (e) {
          if (!(e && e.kind === 'deviceLost') && !lost()) throw e;
        }
        throwIfAborted(signal, 'fit', `after ${run.step} of ${total} steps`);
        // values read from a lost device are not to be trusted
        if (values === null || lost()) run.fail(String(model._rt.lost || 'the read failed'));
        else run.feed(net, values);
        noteCheckpoint();
      } else if (ev.type === 'log') {
        const logs = { loss: ev.loss };
        if (withAcc) logs.accuracy = ev.accuracy;
        single = onBatchEnd ? (await onBatchEnd(ev.step, logs)) === 'step' : false;
      } else if (ev.type === 'checkpoint') {
        noteCheckpoint();
        if (saveDue) {
          saveDue = false;
          await save();
        }
      } else if (ev.type === 'epoch') {
        const logs = { loss: ev.loss };
        if (withAcc) logs.accuracy = ev.accuracy;
        if (val) {
          logs.valLoss = ev.valLoss;
          if (ev.valAccuracy !== undefined && withAcc) logs.valAccuracy = ev.valAccuracy;
        }
        if (onEpochEnd) await onEpochEnd(ev.epoch, logs);
      } else if (ev.type === 'deviceLost') {
        // the run goes back to its last checkpoint once the backend runs again
        if (!checkpoints || losses.length >= maxRecoveries) throw lostError();
        const rt = model._rt;
        const info = { step: ev.step, checkpointStep: ev.checkpointStep, redo: ev.step - ev.checkpointStep, lostBackend: rt.backend, reason: rt.lost || ev.reason };
        const t = now();
        abandon(rt);
        dropNet(model);
        const rec = await recoverRuntime(rt);
        net = rebuild(model);
        run.recover(net, rt._inner);
        Object.assign(info, { backend: rt.backend, tried: rec.tried, recoveryMs: now() - t });
        losses.push(info);
        if (onDeviceLost) await onDeviceLost(info);
      } else if (ev.type === 'done') {
        const s = ev.stopped;
        if (s && s.kind === 'nonFiniteLoss') {
          stopped = {
            step: s.step,
            reason: `the loss read back at step ${s.step} is ${s.loss} (not finite; it became so within the last ${readEvery} steps)`,
            restoredStep: model._lastCheckpoint ? s.restoredStep : null,
          };
        }
        break;
      }
    }
    noteCheckpoint();
    if (autosave && !stopped && model._lastCheckpoint && savedAt !== model._lastCheckpoint.step) await save();
    const h = run.finish(net);
    /** @type {import('./index.js').History['history']} */
    const history = withAcc ? { loss: [], accuracy: [] } : { loss: [] };
    if (val) Object.assign(history, withAcc ? { valLoss: [], valAccuracy: [] } : { valLoss: [] });
    for (const e of h.epochs) {
      history.loss.push(e.loss);
      if (withAcc) history.accuracy.push(e.accuracy);
      if (val) {
        history.valLoss.push(e.valLoss);
        if (withAcc && e.valAccuracy !== undefined) history.valAccuracy.push(e.valAccuracy);
      }
    }
    const ck = model._lastCheckpoint;
    /** @type {import('./index.js').History} */
    const out = {
      history,
      epoch: history.loss.map((_, i) => i),
      checkpoints: { every: h.every, taken: h.taken, ms: h.seconds * 1000, bytes: ck ? ck.bytes : 0 },
      deviceLosses: losses,
    };
    if (stopped) out.stopped = stopped;
    if (resume) out.resumedFrom = resumedFrom;
    if (autosave) out.storagePersisted = persisted;
    return out;
  } finally {
    model._fitting = false;
    if (run) release(run);
  }
}
