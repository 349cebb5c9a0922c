// `tensor.gpuBuffer()` (WebGPU): a tensor's float32 values copied on the device into a new
// GPUBuffer of exactly `4 * size` bytes with usage STORAGE | COPY_SRC | COPY_DST. The buffer is
// the caller's: pixelgrad keeps no reference, it outlives the tensor's `dispose()`, and the
// caller destroys it (`buffer.destroy()`). It lives on the runtime's device (`rt.gpuDevice`)
// and dies with it on a device loss.

const STORAGE = 0x80;
const COPY_SRC = 0x04;
const COPY_DST = 0x08;

/** A new GPUBuffer with the values of device tensor `inner` of runtime `rt`. */
export function copyOut(rt, inner) {
  const { buffer, bytes } = rt._inner.exportGpuBuffer(inner);
  const device = rt._inner.gpuDevice;
  // at least 4 bytes: a zero-size buffer cannot be bound as storage
  const out = device.createBuffer({ label: 'pixelgrad gpuBuffer', size: Math.max(bytes, 4), usage: STORAGE | COPY_SRC | COPY_DST });
  if (bytes > 0) {
    const enc = device.createCommandEncoder({ label: 'pixelgrad gpuBuffer' });
    enc.copyBufferToBuffer(buffer, 0, out, 0, bytes);
    device.queue.submit([enc.finish()]);
  }
  return out;
}
