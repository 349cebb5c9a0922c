// How camera frames (an HTMLVideoElement or a VideoFrame) reach a WebGPU texture: directly with
// copyExternalImageToTexture, or drawn onto a 2D canvas first (one more copy).
//
// Direct is the default. The canvas path is taken:
// - on a software adapter: Chromium's SwiftShader invalidates the page's whole WebGPU instance
//   (every device, the runtime's too, even from a Worker) on any GPU access to a camera frame,
//   by copyExternalImageToTexture or importExternalTexture alike (Chromium 156); and
// - on an adapter where a direct copy was followed by a device loss before, remembered in
//   localStorage per adapter: the first such loss is recovered like any other (recovery.js), and
//   later frames and page loads take the canvas path.
// `rt.report.videoInput` says which path the last video frame took and why.

const KEY = 'pixelgrad.videoCopyLost';

function lostOn() {
  try {
    const v = JSON.parse(globalThis.localStorage.getItem(KEY) || '[]');
    return Array.isArray(v) ? v : [];
  } catch {
    return []; // no storage (a Worker, an opaque origin) or a corrupt entry
  }
}

/** `{ path: 'direct' | 'canvas', reason }` for a video frame on the WebGPU runtime `rt`. */
export function videoPath(rt) {
  const { software, adapter } = rt.report;
  if (software) {
    return { path: 'canvas', reason: `software adapter '${adapter}': a direct copy of a camera frame destroys its WebGPU instance` };
  }
  if (lostOn().includes(adapter)) {
    return { path: 'canvas', reason: `a direct copy of a video frame on '${adapter}' was followed by a device loss before` };
  }
  return { path: 'direct', reason: 'copyExternalImageToTexture from the frame' };
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
