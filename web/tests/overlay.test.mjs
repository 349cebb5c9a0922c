// Heatmap overlays on the GPU (headless Chromium, WebGPU on SwiftShader): `pg.drawHeatmap` into
// a WebGPU canvas context draws with one render pass and reads nothing back (the runtime's
// readback counter does not move; the 2D-canvas path's does), with the same colours as the 2D
// path, and `overlay` blends over what the canvas already holds this frame.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage } from './harness.mjs';

let page;
let close;

before(async () => ({ page, close } = await openPage('tests/pages/blank.html')));
after(() => close?.());

test('drawHeatmap into a GPUTexture: drawn on the device, no readback, the 2D path\'s colours, overlay blends', async () => {
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const rt = await pg.init({ backend: 'webgpu', allowSoftware: true });
    const device = rt.gpuDevice;
    // [2, 3] map: 0, 0.5, 1 / -1, 0, 2
    const map = pg.tensor([0, 0.5, 1, -1, 0, 2], [2, 3]);
    const tex = device.createTexture({ size: [3, 2], format: 'rgba8unorm', usage: GPUTextureUsage.RENDER_ATTACHMENT | GPUTextureUsage.COPY_SRC });
    // the page reads its texture with its own calls (not pixelgrad's readback)
    const shown = async () => {
      const b = device.createBuffer({ size: 256 * 2, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const enc = device.createCommandEncoder();
      enc.copyTextureToBuffer({ texture: tex }, { buffer: b, bytesPerRow: 256 }, [3, 2]);
      device.queue.submit([enc.finish()]);
      await b.mapAsync(GPUMapMode.READ);
      const d = new Uint8Array(b.getMappedRange().slice(0));
      b.destroy();
      return (x, y) => Array.from(d.slice(256 * y + 4 * x, 256 * y + 4 * x + 4));
    };
    const r0 = rt.memory().readbacks;
    await pg.drawHeatmap(map, tex, { colormap: 'heat' });
    const gpuReadbacks = rt.memory().readbacks - r0;
    const path = rt.report.overlay;
    let px = await shown();
    const heat = { zero: px(0, 0), half: px(1, 0), one: px(2, 0), clip: px(2, 1) };
    // the mask over it: 0 keeps what is there, 1 is opaque red
    await pg.drawHeatmap(map, tex, { colormap: 'mask', overlay: true });
    px = await shown();
    const over = { kept: px(0, 0), red: px(2, 0) };
    // the 2D path reads the image back
    const c2 = document.createElement('canvas');
    const r1 = rt.memory().readbacks;
    await pg.drawHeatmap(map, c2, { colormap: 'heat' });
    const canvasReadbacks = rt.memory().readbacks - r1;
    const path2 = rt.report.overlay;
    const half2d = Array.from(c2.getContext('2d').getImageData(1, 0, 1, 1).data);
    const err = async (f) => {
      try {
        await f();
        return '';
      } catch (e) {
        return `${e.kind}: ${e.message}`;
      }
    };
    const errors = {
      // a WebGPU canvas destroys SwiftShader's WebGPU instance: refused before any draw
      softwareCanvas: await err(() => pg.drawHeatmap(map, document.createElement('canvas').getContext('webgpu'))),
      noRender: await err(() => pg.drawHeatmap(map, device.createTexture({ size: [3, 2], format: 'rgba8unorm', usage: GPUTextureUsage.COPY_SRC }))),
      otherDevice: await err(async () => {
        const other = await (await navigator.gpu.requestAdapter()).requestDevice();
        await pg.drawHeatmap(map, other.createTexture({ size: [3, 2], format: 'rgba8unorm', usage: GPUTextureUsage.RENDER_ATTACHMENT }));
      }),
    };
    const still = Array.from(await pg.matmul(pg.tensor([[1, 2]]), pg.tensor([[3], [4]])).data());
    const lost = rt.lost;
    await pg.init({ backend: 'cpu' });
    errors.cpu = await err(() => pg.drawHeatmap(pg.tensor([1, 2], [1, 2]), tex));
    return { gpuReadbacks, canvasReadbacks, path, path2, heat, over, half2d, errors, still, lost };
  });
  assert.equal(r.gpuReadbacks, 0, 'the GPU path reads nothing back');
  assert.equal(r.canvasReadbacks, 1, 'the 2D path reads the image back (so the counter would show one)');
  assert.equal(r.path.path, 'gpu');
  assert.equal(r.path2.path, 'readback');
  assert.deepEqual(r.heat.zero, [0, 0, 0, 255], '0 is black');
  assert.deepEqual(r.heat.one, [255, 255, 255, 255], '1 is white');
  assert.deepEqual(r.heat.clip, [255, 255, 255, 255], 'above the range clips');
  assert.ok(r.heat.half.every((v, i) => Math.abs(v - r.half2d[i]) <= 1), `0.5 as on the 2D path: ${r.heat.half} vs ${r.half2d}`);
  assert.deepEqual(r.over.kept, [0, 0, 0, 255], 'mask 0 keeps what the texture held');
  assert.deepEqual(r.over.red, [255, 0, 0, 255], 'mask 1 is opaque red over it');
  assert.match(r.errors.softwareCanvas, /^invalid: drawHeatmap: software adapter .*destroys its WebGPU instance/);
  assert.match(r.errors.noRender, /^invalid: drawHeatmap: the texture's usage \(1\) lacks GPUTextureUsage.RENDER_ATTACHMENT/);
  assert.match(r.errors.otherDevice, /^deviceMismatch: drawHeatmap: the draw was refused/);
  assert.match(r.errors.cpu, /^invalid: drawHeatmap: a WebGPU canvas context or GPUTexture needs the webgpu runtime/);
  assert.deepEqual(r.still, [11], 'the runtime works after the refusals');
  assert.equal(r.lost, null);
});
