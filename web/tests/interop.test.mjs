// GPU interop in headless Chromium (WebGPU on SwiftShader): `init({ device })` shares the
// page's GPUDevice; `pg.fromGPUBuffer` and `tensor.gpuBuffer()` round-trip known values through
// buffers the page writes and reads with its own WebGPU calls; wrong shapes, sizes, usage flags,
// dtypes and devices are typed errors, and the runtime keeps working after each; ownership
// (the caller's buffer stays the caller's, an exported buffer outlives dispose()) holds.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage } from './harness.mjs';

let page;
let close;

before(async () => ({ page, close } = await openPage('tests/pages/blank.html')));
after(() => close?.());

test('init({ device }) runs on the page\'s GPUDevice; buffers round-trip through fromGPUBuffer, a computation and gpuBuffer', async () => {
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter.requestDevice();
    const rt = await pg.init({ device, allowSoftware: true });
    const U = GPUBufferUsage;
    // the page writes [1..6] into its own buffer
    const src = device.createBuffer({ size: 24, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST });
    device.queue.writeBuffer(src, 0, new Float32Array([1, 2, 3, 4, 5, 6]));
    const x = await pg.fromGPUBuffer(src, [2, 3]);
    // the caller's buffer stays the caller's: overwriting it now does not change the tensor
    device.queue.writeBuffer(src, 0, new Float32Array([9, 9, 9, 9, 9, 9]));
    const w = pg.tensor([[1, 0], [0, 1], [1, 1]]);
    const y = pg.matmul(x, w); // [[1+3, 2+3], [4+6, 5+6]]
    const before = rt.memory().readbacks;
    const out = y.gpuBuffer();
    const readbacksByExport = rt.memory().readbacks - before;
    y.dispose(); // the exported buffer is the caller's: it outlives the tensor
    const read = device.createBuffer({ size: out.size, usage: U.MAP_READ | U.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(out, 0, read, 0, out.size);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const got = Array.from(new Float32Array(read.getMappedRange().slice(0)));
    read.unmap();
    const xs = Array.from(await x.data());
    return {
      shared: rt.gpuDevice === device,
      sharedReport: rt.report.sharedDevice,
      backend: rt.backend,
      xs,
      got,
      size: out.size,
      usage: out.usage,
      readbacksByExport,
      lost: rt.lost,
    };
  });
  assert.equal(r.backend, 'webgpu');
  assert.equal(r.shared, true, 'rt.gpuDevice is the page\'s device');
  assert.equal(r.sharedReport, true);
  assert.deepEqual(r.xs, [1, 2, 3, 4, 5, 6], 'fromGPUBuffer copied the page\'s values');
  assert.deepEqual(r.got, [4, 5, 10, 11], 'the page reads the product from the exported buffer');
  assert.equal(r.size, 16, 'the exported buffer is exactly 4 * size bytes');
  assert.equal(r.usage, 0x80 | 0x04 | 0x08, 'STORAGE | COPY_SRC | COPY_DST');
  assert.equal(r.readbacksByExport, 0, 'gpuBuffer reads nothing back to the host');
  assert.equal(r.lost, null);
});

test('fromGPUBuffer and gpuBuffer: typed errors for shape, size, usage, dtype and device; the runtime stays usable', async () => {
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter.requestDevice();
    const other = await (await navigator.gpu.requestAdapter()).requestDevice();
    const rt = await pg.init({ device, allowSoftware: true });
    const U = GPUBufferUsage;
    const ok = device.createBuffer({ size: 16, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST });
    device.queue.writeBuffer(ok, 0, new Float32Array([1, 2, 3, 4]));
    const noCopy = device.createBuffer({ size: 16, usage: U.STORAGE });
    const foreign = other.createBuffer({ size: 16, usage: U.STORAGE | U.COPY_SRC });
    const gone = device.createBuffer({ size: 16, usage: U.STORAGE | U.COPY_SRC });
    gone.destroy();
    const err = async (f) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { cls: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, backend: e.backend, msg: e.message };
      }
    };
    const out = {
      shape: await err(() => pg.fromGPUBuffer(ok, [2, -1])),
      size: await err(() => pg.fromGPUBuffer(ok, [2, 3])),
      usage: await err(() => pg.fromGPUBuffer(noCopy, [4])),
      dtype: await err(() => pg.fromGPUBuffer(ok, [4], 'float16')),
      notBuffer: await err(() => pg.fromGPUBuffer(new Float32Array(4), [4])),
      foreign: await err(() => pg.fromGPUBuffer(foreign, [4])),
      destroyed: await err(() => pg.fromGPUBuffer(gone, [4])),
      badDevice: await err(() => pg.init({ device: {} })),
      deviceOnWebgl: await err(() => pg.init({ device, backend: 'webgl' })),
    };
    // still usable, on the same device
    const t = await pg.fromGPUBuffer(ok, [4]);
    out.after = Array.from(await t.data());
    out.same = rt.gpuDevice === device && pg.init !== undefined;
    // after dispose, gpuBuffer is refused
    t.dispose();
    out.disposed = await err(() => t.gpuBuffer());
    // a host tensor is uploaded and exported
    const h = pg.tensor([5, 6]).gpuBuffer();
    out.hostSize = h.size;
    h.destroy();
    // pixelgrad never destroys the shared device: after the runtime is replaced it still works
    await pg.init({ backend: 'cpu' });
    out.cpuGpuBuffer = await err(() => pg.tensor([1]).gpuBuffer());
    out.cpuFrom = await err(() => pg.fromGPUBuffer(ok, [4]));
    const probe = device.createBuffer({ size: 4, usage: U.MAP_READ | U.COPY_DST });
    device.queue.writeBuffer(probe, 0, new Float32Array([7]));
    await probe.mapAsync(GPUMapMode.READ);
    out.deviceAlive = new Float32Array(probe.getMappedRange())[0];
    return out;
  });
  const typed = (e, kind, re, name) => {
    assert.ok(e, `${name}: an error`);
    assert.equal(e.cls, true, `${name}: a PixelgradError`);
    assert.equal(e.kind, kind, `${name}: kind ${e.kind} (${e.msg})`);
    assert.match(e.msg, re, name);
  };
  typed(r.shape, 'shape', /^fromGPUBuffer: shape must be an array of whole numbers/, 'shape');
  typed(r.size, 'shape', /holds 16 bytes; shape \[2,3\] of float32 needs 24/, 'size');
  typed(r.usage, 'invalid', /lacks GPUBufferUsage.COPY_SRC/, 'usage');
  typed(r.dtype, 'invalid', /dtype 'float16' is not supported/, 'dtype');
  typed(r.notBuffer, 'invalid', /buffer must be a GPUBuffer, got \[object Float32Array\]/, 'not a buffer');
  typed(r.foreign, 'deviceMismatch', /not a live buffer of the runtime's GPUDevice/, 'a buffer of another device');
  typed(r.destroyed, 'deviceMismatch', /not a live buffer of the runtime's GPUDevice/, 'a destroyed buffer');
  typed(r.badDevice, 'invalid', /device must be a GPUDevice/, 'init with a non-device');
  typed(r.deviceOnWebgl, 'invalid', /for backend 'webgpu'/, 'init with a device for webgl');
  assert.equal(r.shape.op, 'fromGPUBuffer');
  assert.equal(r.shape.backend, 'webgpu');
  assert.deepEqual(r.after, [1, 2, 3, 4], 'the runtime works after every refusal');
  assert.equal(r.same, true);
  typed(r.disposed, 'invalid', /the tensor was disposed/, 'gpuBuffer after dispose');
  assert.equal(r.hostSize, 8);
  typed(r.cpuGpuBuffer, 'invalid', /cpu runtime has no GPUBuffer/, 'gpuBuffer on cpu');
  typed(r.cpuFrom, 'invalid', /cpu runtime has no GPUBuffer/, 'fromGPUBuffer on cpu');
  assert.equal(r.deviceAlive, 7, 'the page\'s device outlives the runtime that shared it');
});

test('webgl textures: a page texture round-trips through fromTexture, a computation and texture(); wrong inputs are typed errors', async () => {
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const rt = await pg.init({ backend: 'webgl', allowSoftware: true });
    const gl = rt.glContext;
    const layout = rt.textureLayout([2, 3]);
    // the page writes [1..6] into its own texture in the runtime's layout (4 values a texel)
    const tex = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, tex);
    gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA32F, layout.width, layout.height);
    const texels = new Float32Array(4 * layout.width * layout.height);
    texels.set([1, 2, 3, 4, 5, 6]);
    gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, layout.width, layout.height, gl.RGBA, gl.FLOAT, texels);
    gl.bindTexture(gl.TEXTURE_2D, null);
    const x = pg.fromTexture(tex, [2, 3]);
    gl.deleteTexture(tex); // the page's texture stays the page's: the tensor has its own copy
    const xs = Array.from(await x.data());
    const y = pg.matmul(x, pg.tensor([[1, 0], [0, 1], [1, 1]]));
    const before = rt.memory().readbacks;
    const out = y.texture();
    const readbacksByExport = rt.memory().readbacks - before;
    y.dispose(); // the exported texture is the caller's: it outlives the tensor
    // the page reads the exported texture with its own calls
    const fb = gl.createFramebuffer();
    const prev = gl.getParameter(gl.FRAMEBUFFER_BINDING);
    gl.bindFramebuffer(gl.FRAMEBUFFER, fb);
    gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, out.texture, 0);
    const px = new Float32Array(4 * out.width * out.height);
    gl.readPixels(0, 0, out.width, out.height, gl.RGBA, gl.FLOAT, px);
    gl.bindFramebuffer(gl.FRAMEBUFFER, prev);
    gl.deleteFramebuffer(fb);
    gl.deleteTexture(out.texture);
    const err = (f) => {
      try {
        f();
        return null;
      } catch (e) {
        return { cls: e instanceof pg.PixelgradError, kind: e.kind, msg: e.message };
      }
    };
    const other = document.createElement('canvas').getContext('webgl2');
    const foreign = other.createTexture();
    other.bindTexture(other.TEXTURE_2D, foreign);
    const deleted = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, deleted);
    gl.bindTexture(gl.TEXTURE_2D, null);
    gl.deleteTexture(deleted);
    const bytes = gl.createTexture(); // an 8-bit texture: not a float format
    gl.bindTexture(gl.TEXTURE_2D, bytes);
    gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA8, layout.width, layout.height);
    gl.bindTexture(gl.TEXTURE_2D, null);
    const errors = {
      notTexture: err(() => pg.fromTexture(new Float32Array(4), [4])),
      shape: err(() => pg.fromTexture(tex, [2, -1])),
      foreign: err(() => pg.fromTexture(foreign, [2, 3])),
      deleted: err(() => pg.fromTexture(deleted, [2, 3])),
      format: err(() => pg.fromTexture(bytes, [2, 3])),
    };
    const still = Array.from(await pg.matmul(pg.tensor([[1, 2]]), pg.tensor([[3], [4]])).data());
    await pg.init({ backend: 'cpu' });
    errors.cpu = err(() => pg.fromTexture(bytes, [1]));
    errors.cpuExport = err(() => pg.tensor([1]).texture());
    return { xs, got: Array.from(px.slice(0, 4)), layout, size: [out.width, out.height], format: out.internalFormat, readbacksByExport, errors, still };
  });
  assert.deepEqual(r.xs, [1, 2, 3, 4, 5, 6], 'fromTexture copied the page\'s texels');
  assert.deepEqual(r.got, [4, 5, 10, 11], 'the page reads the product from the exported texture');
  assert.ok(r.size[0] >= 1 && r.size[1] >= 1);
  assert.equal(r.format, 0x8814, 'RGBA32F');
  assert.equal(r.readbacksByExport, 0, 'texture() reads nothing back');
  const typed = (e, kind, re, name) => {
    assert.ok(e && e.cls, `${name}: a PixelgradError ${JSON.stringify(e)}`);
    assert.equal(e.kind, kind, `${name}: ${e.msg}`);
    assert.match(e.msg, re, name);
  };
  typed(r.errors.notTexture, 'invalid', /^fromTexture: texture must be a WebGLTexture/, 'not a texture');
  typed(r.errors.shape, 'invalid', /^fromTexture: shape must be an array of whole numbers/, 'shape');
  typed(r.errors.foreign, 'deviceMismatch', /not a live texture of rt.glContext/, 'another context\'s texture');
  typed(r.errors.deleted, 'deviceMismatch', /not a live texture of rt.glContext/, 'a deleted texture');
  typed(r.errors.format, 'backend', /^fromTexture.*the source texture holds component type 0x8C17, not floats/, 'an 8-bit texture');
  typed(r.errors.cpu, 'invalid', /cpu runtime has no WebGL2 textures/, 'fromTexture on cpu');
  typed(r.errors.cpuExport, 'invalid', /cpu runtime has no WebGL2 textures/, 'texture() on cpu');
  assert.deepEqual(r.still, [11], 'the runtime works after the refusals');
});

test('a shared device the page destroys: the runtime reports the loss, recovers onto a device of its own and says it no longer shares', async () => {
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const device = await (await navigator.gpu.requestAdapter()).requestDevice();
    const rt = await pg.init({ device, allowSoftware: true });
    const U = GPUBufferUsage;
    const buf = device.createBuffer({ size: 8, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST });
    const x = await pg.fromGPUBuffer(buf, [2]);
    const shared = rt.report.sharedDevice;
    device.destroy();
    await device.lost;
    await new Promise((res) => setTimeout(res, 50));
    const lost = rt.lost;
    let oldTensor = '';
    try {
      await x.data();
    } catch (e) {
      oldTensor = e.kind;
    }
    const rec = await rt.recover();
    const y = pg.matmul(pg.tensor([[1, 2]]), pg.tensor([[3], [4]]));
    const fresh = rt.gpuDevice;
    return { shared, lost, oldTensor, recovered: rec.backend, after: rt.report.sharedDevice, differs: fresh !== device, value: Array.from(await y.data()) };
  });
  assert.equal(r.shared, true);
  assert.ok(r.lost, 'the loss of the shared device is the runtime\'s loss');
  assert.equal(r.oldTensor, 'deviceLost', 'tensors of the lost device refuse');
  assert.equal(r.recovered, 'webgpu');
  assert.equal(r.after, false, 'the recovered runtime runs on a device of its own');
  assert.equal(r.differs, true);
  assert.deepEqual(r.value, [11]);
});
