// GPU interop on the WebGPU runtime: `pg.fromGPUBuffer(buffer, shape, dtype)` makes a tensor
// from a page's GPUBuffer, `tensor.gpuBuffer()` (gpucopy.js) gives one out. wgpu cannot wrap a
// foreign GPUBuffer, so each is one copyBufferToBuffer on the device: no readback, no host copy.
//
// Ownership: the caller's buffer stays the caller's (pixelgrad only reads it, in the copy this
// call submits; the caller may write, reuse or destroy it as soon as the call returns: later
// queue work runs after the copy). The tensor owns its own memory, freed by `dispose()`. The
// buffer must come from the runtime's device (`rt.gpuDevice`: the page's own with
// `init({ device })`), hold at least `4 * size` bytes and have GPUBufferUsage.COPY_SRC.
import { PixelgradError } from './errors.js';
import { currentRuntime } from './runtime.js';
import { deviceTensor } from './tensor.js';

const COPY_SRC = 0x04;

/** A typed error of `kind` naming the op, the shape and the backend. */
function fail(kind, msg, shape) {
  return new PixelgradError(`fromGPUBuffer: ${msg}`, { kind, op: 'fromGPUBuffer', shapes: shape ? [shape] : [], backend: 'webgpu' });
}

/**
 * A float32 tensor of `shape` holding the first `4 * size` bytes of `buffer` (f32, row-major),
 * copied on the device. Rejects with kind 'invalid' (not WebGPU, not a GPUBuffer, a mapped
 * buffer, no COPY_SRC usage, a dtype other than float32), 'shape' (a bad shape, a buffer too
 * small for it) or 'deviceMismatch' (a buffer of another GPUDevice, or destroyed).
 */
export async function fromGPUBuffer(buffer, shape, dtype = 'float32') {
  const what = 'fromGPUBuffer';
  const rt = currentRuntime(what);
  rt._check(what);
  if (rt.backend !== 'webgpu') throw fail('invalid', `the ${rt.backend} runtime has no GPUBuffer: GPU buffers are a WebGPU feature (init({ backend: 'webgpu' }))`);
  if (typeof GPUBuffer === 'undefined' || !(buffer instanceof GPUBuffer)) {
    throw fail('invalid', `buffer must be a GPUBuffer, got ${buffer === null ? 'null' : typeof buffer !== 'object' ? typeof buffer : Object.prototype.toString.call(buffer)}`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0 && d < 2 ** 32)) {
    throw fail('shape', `shape must be an array of whole numbers >= 0, got ${JSON.stringify(shape)}`);
  }
  if (dtype !== 'float32') throw fail('invalid', `dtype '${dtype}' is not supported: GPU buffers are read as float32`, shape);
  const bytes = 4 * shape.reduce((a, d) => a * d, 1);
  if (buffer.size < bytes) throw fail('shape', `the buffer holds ${buffer.size} bytes; shape [${shape}] of float32 needs ${bytes}`, shape);
  if (!(buffer.usage & COPY_SRC)) throw fail('invalid', `the buffer's usage (${buffer.usage}) lacks GPUBufferUsage.COPY_SRC, which the copy onto the tensor needs`, shape);
  if (buffer.mapState !== 'unmapped') throw fail('invalid', `the buffer is ${buffer.mapState}; unmap it first`, shape);
  const device = rt._inner.gpuDevice;
  device.pushErrorScope('validation');
  let inner = null;
  let thrown = null;
  try {
    inner = rt._inner.importGpuBuffer(Uint32Array.from(shape), (dst, n) => {
      const enc = device.createCommandEncoder({ label: 'pixelgrad fromGPUBuffer' });
      enc.copyBufferToBuffer(buffer, 0, dst, 0, n);
      device.queue.submit([enc.finish()]);
    });
  } catch (e) {
    thrown = e;
  }
  const err = await device.popErrorScope();
  if (thrown) throw thrown;
  const t = deviceTensor(inner, rt);
  if (err) {
    t.dispose();
    const mismatch = /associated with|cannot be used with|destroyed|invalid/i.test(err.message);
    throw fail(mismatch ? 'deviceMismatch' : 'invalid', `${mismatch ? 'the buffer is not a live buffer of the runtime\'s GPUDevice (rt.gpuDevice)' : 'the copy was refused'}: ${err.message}`, shape);
  }
  return t;
}
