// `init({ device })`: the WebGPU backend on a GPUDevice the page already has (three.js, a video
// pipeline). wgpu 30, which the backend is built on, has no call that wraps a JavaScript
// GPUDevice (it wraps foreign GPUTextures only), but it opens its device through
// `navigator.gpu.requestAdapter()` and `adapter.requestDevice()`: for the duration of the
// backend's start, the first requestAdapter call answers an adapter whose requestDevice
// resolves to the page's device, with that device's own features, limits and adapter info. The
// override is removed before the start resolves or fails. pixelgrad never destroys a shared
// device; it sets the device's `onuncapturederror` (use addEventListener on the page's side).

/** A GPUDevice, or an error saying what was passed instead. */
export function checkDevice(device) {
  if (typeof GPUDevice === 'undefined' || !(device instanceof GPUDevice)) {
    const got = device === null ? 'null' : typeof device !== 'object' ? typeof device : Object.prototype.toString.call(device);
    throw new Error(`pg.init: device must be a GPUDevice (from adapter.requestDevice()), got ${got}`);
  }
  return device;
}

/** Runs `start()` (the WebGPU backend's start) so that it opens `device` instead of a new one. */
export async function withSharedDevice(device, start) {
  const gpu = globalThis.navigator.gpu;
  const info = device.adapterInfo || {};
  const adapter = {
    features: device.features,
    limits: device.limits,
    info,
    isFallbackAdapter: !!info.isFallbackAdapter,
    requestAdapterInfo: async () => info,
    requestDevice: async (desc = {}) => {
      const missing = Array.from(desc.requiredFeatures || []).filter((f) => !device.features.has(f));
      if (missing.length) throw new Error(`the shared GPUDevice lacks the features ${missing.join(', ')}`);
      return device;
    },
  };
  let used = false;
  const own = Object.getPrototypeOf(gpu).requestAdapter;
  Object.defineProperty(gpu, 'requestAdapter', {
    configurable: true,
    writable: true,
    value(opts) {
      if (used) return own.call(gpu, opts);
      used = true;
      return Promise.resolve(adapter);
    },
  });
  try {
    return await start();
  } finally {
    delete gpu.requestAdapter;
  }
}
