// fit's optional autosave to IndexedDB and `resume` after a page reload. Each save holds the
// last checkpoint (weights, buffers, optimizer state and counters as safetensors bytes, the
// native `Checkpoint::to_bytes` format) and the run's state there (`wasm.FitRun.resumeState`:
// the native `train::Resume` without its checkpoint: position, epoch sums, logs so far), in
// the `checkpoints` store of the `pixelgrad` database (storage.js). A
// resumed fit must be the same model and schedule (samples, batch size, epochs, seed,
// shuffling, read interval); it then continues exactly where the save was taken.
import { wasm } from './runtime.js';
import { PixelgradError } from './errors.js';
import { getCheckpoint, parseUrl, putCheckpoint } from './storage.js';

/** The record name of an `indexeddb://name` url given to fit's `autosave` / `resume`. */
export function recordName(url, what) {
  const { scheme, name } = parseUrl(url, what);
  if (scheme !== 'indexeddb') throw new PixelgradError(`${what}: only 'indexeddb://name' is supported, got ${JSON.stringify(url)}`);
  return name;
}

function configOf(model, what) {
  if (model._layers.some((l) => l.type === 'onnx')) throw new PixelgradError(`${what}: a model with imported onnx layers cannot be autosaved`);
  return JSON.stringify(model._config());
}

/** Writes checkpoint `ck` of `model`, with the run's `state` there, as record `name`. */
export async function saveCheckpoint(name, model, ck, schedule, state) {
  const bytes = ck._host.toBytes(JSON.stringify({ format: 'pixelgrad-checkpoint' }));
  await putCheckpoint({
    name,
    checkpoint: bytes,
    step: ck.step,
    state,
    schedule,
    config: configOf(model, 'fit: autosave'),
    savedAt: new Date().toISOString(),
    backend: model._rt.backend,
  });
}

/**
 * Record `name` as `{ host: HostCheckpoint, state, step, savedAt }`, or null when there is none.
 * A save of another model or schedule is an error naming what differs.
 */
export async function loadCheckpoint(name, model, schedule) {
  const rec = await getCheckpoint(name);
  if (!rec) return null;
  if (rec.config !== configOf(model, 'fit: resume')) {
    throw new PixelgradError(`fit: resume 'indexeddb://${name}': the saved run is of another model (${rec.config})`);
  }
  for (const [k, v] of Object.entries(schedule)) {
    if (rec.schedule[k] !== v) {
      throw new PixelgradError(`fit: resume 'indexeddb://${name}': the saved run has ${k} ${rec.schedule[k]}, this fit ${v}; resume with the same data and options`);
    }
  }
  return { host: wasm.HostCheckpoint.fromBytes(rec.checkpoint), state: rec.state, step: rec.step, savedAt: rec.savedAt };
}
