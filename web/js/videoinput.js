// How camera frames (an HTMLVideoElement or a VideoFrame) reach a WebGPU texture: directly with
// copyExternalImageToTexture, or drawn onto a 2D canvas first (one more copy).
//
// Direct is the default, and a probe checks it: the first direct copy on each device runs inside
// a validation error scope, and an error there (or a device loss after it: recovery.js) sends the
// frames after it through the 2D canvas. The canvas path is taken:
// - on a software adapter, without probing: Chromium's SwiftShader invalidates the page's whole
//   WebGPU instance (every device, the runtime's too, even from a Worker) on any GPU access to a
//   video frame, by copyExternalImageToTexture or importExternalTexture alike, for camera frames,
//   VideoFrames made from a canvas and canvas-capture videos (Chromium 156), so a probe there
//   would destroy the runtime it asks for;
// - after the probe failed on this device; and
// - on an adapter where a direct copy was followed by a device loss before, remembered in
//   localStorage per adapter: the first such loss is recovered like any other (recovery.js), and
//   later frames and page loads take the canvas path.
// `rt.report.videoInput` says which path the last video frame took, why, and the probe's state.

const KEY = 'pixelgrad.videoCopyLost';

/** Test hook (`__setVideoProbe`): 'fail' makes every probe fail before any direct copy. */
let forced = null;

function lostOn() {
  try {
    const v = JSON.parse(globalThis.localStorage.getItem(KEY) || '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return []; // no storage (a Worker, an opaque origin) or a corrupt entry
  }
}

/** The probe of `rt`'s current device: `{ state: 'pending' | 'running' | 'passed' | 'failed', reason }`. */
function probeOf(rt) {
  const p = rt._videoProbe;
  return p && p.gen === rt._gen ? p : { gen: rt._gen, state: 'pending', reason: '' };
}

/**
 * `{ path: 'direct' | 'canvas', reason, probe }` for a video frame on the WebGPU runtime `rt`;
 * `probe`: the direct-copy probe's state on this device ('pending', 'running', 'passed',
 * 'failed', or 'skipped' on a software adapter).
 */
export function videoPath(rt) {
  const { software, adapter } = rt.report;
  const p = probeOf(rt);
  if (software && !forced) {
    return { path: 'canvas', reason: `software adapter '${adapter}': a direct copy of a camera frame destroys its WebGPU instance`, probe: 'skipped' };
  }
  if (lostOn().includes(adapter)) {
    return { path: 'canvas', reason: `a direct copy of a video frame on '${adapter}' was followed by a device loss before`, probe: p.state };
  }
  if (p.state === 'failed') return { path: 'canvas', reason: `the direct-copy probe failed on this device: ${p.reason}`, probe: p.state };
  const why = p.state === 'passed' ? 'the probe passed' : 'this copy is the probe';
  return { path: 'direct', reason: `copyExternalImageToTexture from the frame (${why})`, probe: p.state };
}

/**
 * Starts the probe on `rt`'s current device if it has not run: true when the direct copy about
 * to be made is the probe (the caller wraps it in a validation error scope and passes the
 * scope's result to `probeEnd`). Under the test hook the probe fails here, before any copy.
 */
export function probeStart(rt) {
  const p = probeOf(rt);
  if (p.state !== 'pending') return false;
  if (forced === 'fail') {
    rt._videoProbe = { gen: rt._gen, state: 'failed', reason: 'failure forced by the test hook (__setVideoProbe)' };
    return false;
  }
  rt._videoProbe = { gen: rt._gen, state: 'running', reason: '' };
  return true;
}

/** The probe's result: `err` is the error scope's GPUError (or a thrown error), null if none. */
export function probeEnd(rt, err) {
  const p = probeOf(rt);
  if (p.state !== 'running') return;
  const msg = err ? err.message || String(err) : '';
  rt._videoProbe = { gen: rt._gen, state: err ? 'failed' : 'passed', reason: msg };
  if (rt.report.videoInput) rt.report.videoInput = videoPath(rt);
}

/** @internal Test hook: `'fail'` makes the direct-copy probe fail (on any adapter); null undoes it. */
export function __setVideoProbe(mode) {
  forced = mode === 'fail' ? 'fail' : null;
}

/** Records that `rt`'s current device has had a direct video copy. */
export function noteDirectCopy(rt) {
  rt._directVideoGen = rt._gen;
}

/** On a device loss: an adapter whose device had a direct video copy takes the canvas path from now on. */
export function noteLoss(rt) {
  if (rt.backend !== 'webgpu' || rt._directVideoGen !== rt._gen) return;
  const adapter = rt.report.adapter;
  const list = lostOn();
  if (list.includes(adapter)) return;
  try {
    globalThis.localStorage.setItem(KEY, JSON.stringify([...list, adapter]));
  } catch {
    // without storage the choice lasts as long as this runtime's report
  }
}
