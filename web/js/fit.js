// The training loop behind `model.fit`, with host checkpoints and recovery from context and
// device loss (the browser half of the native `pixelgrad_nn::train::fit` design):
//
// - Batches are gathered on the host; each step only records device work; loss and accuracy
//   sums are read back (asynchronously) every `readEvery` steps; between batches the loop
//   yields to the event loop so a page stays responsive.
// - When to read back and when to take a checkpoint is decided by the native loop's rule
//   (`pixelgrad_nn::train::Cadence`, through `wasm.FitCadence`): every `checkpointEvery` steps
//   (default: 20, then chosen once from the measured costs) parameters, buffers, optimizer
//   state and dropout counters are copied to host memory (one device op, one readback),
//   together with the loop's own state (step, epoch sums, history so far).
// - When the device is lost (`rt.lost`, or an engine `deviceLost` error) the runtime starts a
//   backend again (recovery.js), the model is rebuilt on it, the last checkpoint restored, and
//   the steps since are redone (at most `checkpointEvery`; their logs are reported again).
//   `onDeviceLost(info)` fires once per loss, after the restore and before training goes on.
// - `stopOnNaN` (default on): the first non-finite loss read back stops training, with the
//   last good checkpoint restored; `result.stopped` says at which step.
// - `signal` (an AbortSignal): checked before every step and after every await; an abort stops
//   training there and rejects with kind 'cancelled' (the model keeps the weights of the last
//   step and stays usable). Every step is one synchronous call into wasm, during which no
//   abort event can run, so the check between steps is the cancel token's next check.
import { wasm } from './runtime.js';
import { PixelgradError } from './errors.js';
import { instanceLostError, isDeadObject, isTrap, ownerOf, release } from './instance.js';
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

/** A checkpoint as users see it (`model.lastCheckpoint`). */
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

/** @internal Takes a checkpoint of `model` after `step` steps; `state`: the loop's, to resume. */
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

function cloneHistory(h) {
  const out = {};
  for (const [k, v] of Object.entries(h)) out[k] = v.slice();
  return out;
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
  let single = false; // onBatchEnd asked for one step at a time (step-through)
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
  const { n, xv, xdev, yv, yshape, yper, sample } = await model._xy(x, y, 'fit', true);
  const per = xv ? xv.length / n : 0;
  const withAcc = net.hasAccuracy(yshape);
  const history0 = withAcc ? { loss: [], accuracy: [] } : { loss: [] };
  if (opts.validationData) Object.assign(history0, withAcc ? { valLoss: [], valAccuracy: [] } : { valLoss: [] });
  const batches = Math.ceil(n / batchSize);
  const total = epochs * batches;
  // The loop's state; a copy goes with every checkpoint so a recovery resumes exactly there.
  let s = { step: 0, sinceRead: 0, sumLoss: 0, sumCorrect: 0, seen: 0, history: history0 };
  const snapshot = () => ({ ...s, history: cloneHistory(s.history) });
  const stats = { taken: 0, ms: 0, bytes: 0, recoveries: 0, losses: [] };
  let stopped = null;
  let order = null;
  let orderEpoch = -1;
  let intervalFrom = 0; // when the steps since the last checkpoint began
  let savedAt = 0;
  let resumedFrom = null;
  const schedule = { n, batchSize, epochs, shuffle, seed, readEvery };

  const lostError = () =>
    new PixelgradError(`fit: the ${model._rt.backend} device was lost (${model._rt.lost})`, { kind: 'deviceLost', op: 'fit', backend: model._rt.backend });
  const checkpointNow = async () => {
    if (model._rt.backend !== 'cpu' && model._rt.lost) throw lostError();
    const t = now();
    const ck = await takeCheckpoint(model, s.step, snapshot());
    stats.ms += now() - t;
    stats.taken += 1;
    if (ck) stats.bytes = ck.bytes;
    else if (stopOnNaN) stopAtNaN(`the parameters at step ${s.step} are not finite`);
    return now() - t;
  };
  // stopOnNaN: the last good checkpoint back into the model, and where it happened
  const stopAtNaN = (why) => {
    const good = model._lastCheckpoint;
    const ok = !!(good && good.isFinite);
    if (ok) net.restore(good._host);
    stopped = { step: s.step, reason: why, restoredStep: ok ? good.step : null };
  };

  const cadence = new wasm.FitCadence(every === null ? undefined : Math.min(every, 0xffffffff), Math.min(readEvery, 0xffffffff));
  let usedEvery = cadence.every;
  model._fitting = true;
  model.stopTraining = false;
  try {
    await net.readTrain(); // drop sums a failed earlier call may have left
    if (resume) {
      const r = await loadCheckpoint(resume, model, schedule);
      if (r) {
        net.restore(r.host);
        release(r.host);
        s = { ...r.state, history: cloneHistory(r.state.history) };
        resumedFrom = r.step;
      }
    }
    savedAt = s.step;
    if (checkpoints) await checkpointNow();
    cadence.startAt(s.step);
    intervalFrom = now();
    while (s.step < total && !stopped) {
      try {
        throwIfAborted(signal, 'fit', `after ${s.step} of ${total} steps`);
        if (model._rt.backend !== 'cpu' && model._rt.lost) throw lostError();
        const epoch = Math.floor(s.step / batches);
        const b = s.step % batches;
        if (orderEpoch !== epoch) {
          order = shuffle ? wasm.shuffledIndices(n, seed, epoch) : null;
          orderEpoch = epoch;
        }
        const start = b * batchSize;
        const m = Math.min(n, start + batchSize) - start;
        const xb = xdev ? null : new Float32Array(m * per);
        const rows = xdev ? new Uint32Array(m) : null;
        const yb = new Float32Array(m * yper);
        for (let i = 0; i < m; i++) {
          const k = order ? order[start + i] : start + i;
          if (xdev) rows[i] = k;
          else xb.set(xv.subarray(k * per, (k + 1) * per), i * per);
          yb.set(yv.subarray(k * yper, (k + 1) * yper), i * yper);
        }
        model._rt._check('fit', model._gen);
        await pace.wait();
        throwIfAborted(signal, 'fit', `after ${s.step} of ${total} steps`);
        if (xdev) net.trainStepRows(xdev, rows, yb, [m, ...yshape.slice(1)]);
        else net.trainStep(xb, [m, ...sample], yb, [m, ...yshape.slice(1)]);
        s.step += 1;
        s.sinceRead += 1;
        const epochEnd = b === batches - 1;
        const due = cadence.afterStep(s.step, s.sinceRead, epochEnd);
        const saveDue = !!autosave && s.step - savedAt >= autosaveEvery;
        const ckDue = checkpoints && (due.checkpoint || saveDue);
        if (due.read || single || model.stopTraining || ckDue) {
          s.sinceRead = 0;
          const r = await net.readTrain();
          if (r) {
            if (stopOnNaN && !Number.isFinite(r[0])) {
              stopAtNaN(`the loss read back at step ${s.step} is ${r[0] / r[2]} (not finite; it became so within the last ${readEvery} steps)`);
              break;
            }
            s.sumLoss += r[0];
            s.sumCorrect += r[1];
            s.seen += r[2];
            const logs = { loss: r[0] / r[2] };
            if (withAcc) logs.accuracy = r[1] / r[2];
            single = onBatchEnd ? (await onBatchEnd(s.step, logs)) === 'step' : false;
          }
        }
        if (epochEnd || model.stopTraining) {
          // a stop mid-epoch still reports that epoch's (partial) means
          if (s.seen === 0) break;
          const logs = { loss: s.sumLoss / s.seen };
          if (withAcc) logs.accuracy = s.sumCorrect / s.seen;
          if (opts.validationData) {
            const [vx, vy] = opts.validationData;
            const v = await model.evaluate(vx, vy, { batchSize: Math.max(batchSize, 256) });
            logs.valLoss = v.loss;
            s.history.valLoss.push(v.loss);
            if (v.accuracy !== undefined && s.history.valAccuracy) {
              logs.valAccuracy = v.accuracy;
              s.history.valAccuracy.push(v.accuracy);
            }
          }
          s.history.loss.push(logs.loss);
          if (withAcc) s.history.accuracy.push(logs.accuracy);
          s.sumLoss = 0;
          s.sumCorrect = 0;
          s.seen = 0;
          if (onEpochEnd) await onEpochEnd(epoch, logs);
        }
        // the last step's checkpoint too (inside this try, so a loss just before it is
        // recovered like any other): `model.restore()` after a later loss loses nothing
        const last = s.step === total || model.stopTraining;
        if (checkpoints && !stopped && (ckDue || last) && model._lastCheckpoint.step !== s.step) {
          const intervalMs = now() - intervalFrom;
          const ms = await checkpointNow();
          // the first interval chooses an automatic one (2 % of training time, 20..2000 steps)
          usedEvery = cadence.checkpointed(s.step, ms, intervalMs);
          intervalFrom = now();
          if (saveDue && !stopped) {
            await saveCheckpoint(autosave, model, model._lastCheckpoint, schedule);
            savedAt = s.step;
          }
        }
        if (model.stopTraining || stopped) break;
        await yieldNow();
      } catch (e) {
        // an abort, a crash, or anything else than a device loss ends fit here
        if (isTrap(e) || (e && ['cancelled', 'panic', 'instanceLost'].includes(e.kind)) || !isLost(model, e)) throw e;
        const ck = model._lastCheckpoint;
        if (!checkpoints || !ck || !ck._state || stats.recoveries >= maxRecoveries) throw e;
        const rt = model._rt;
        const info = { step: s.step, checkpointStep: ck.step, redo: s.step - ck.step, lostBackend: rt.backend, reason: rt.lost || (e && e.message) };
        const t = now();
        abandon(rt);
        dropNet(model);
        const rec = await recoverRuntime(rt);
        net = rebuild(model);
        net.restore(ck._host);
        s = { ...ck._state, history: cloneHistory(ck._state.history) };
        cadence.startAt(s.step);
        intervalFrom = now();
        orderEpoch = -1;
        stats.recoveries += 1;
        Object.assign(info, { backend: rt.backend, tried: rec.tried, recoveryMs: now() - t });
        stats.losses.push(info);
        if (onDeviceLost) await onDeviceLost(info);
      }
    }
    if (autosave && !stopped && savedAt !== s.step) await saveCheckpoint(autosave, model, model._lastCheckpoint, schedule);
  } finally {
    model._fitting = false;
    release(cadence);
  }
  /** @type {import('./index.js').History} */
  const out = {
    history: s.history,
    epoch: s.history.loss.map((_, i) => i),
    checkpoints: { every: usedEvery, taken: stats.taken, ms: stats.ms, bytes: stats.bytes },
    deviceLosses: stats.losses,
  };
  if (stopped) out.stopped = stopped;
  if (resume) out.resumedFrom = resumedFrom;
  if (autosave) out.storagePersisted = persisted;
  return out;
}
