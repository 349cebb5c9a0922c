// Probe: on this Chromium's WebGPU (SwiftShader here), does rendering into a WebGPU canvas keep
// the page's WebGPU instance alive? ('configure' alone does; the first 'clear' pass into
// getCurrentTexture() destroys it: "A valid external Instance reference no longer exists".)
// Raw WebGPU, no pixelgrad runtime; each step on a fresh page. Not a test; overlay.js refuses
// WebGPU canvases on software adapters because of it.
//
//   node web/bench/probe/gpu-canvas.mjs
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';
const server = await startServer(webRoot);
const browser = await launchBrowser([]);
try {
  for (const step of ['configure', 'clear']) {
    const page = await newPage(browser);
    await page.goto(`${server.url}/tests/pages/blank.html`);
    const r = await page.evaluate(async (step) => {
      const out = { step };
      try {
        const device = await (await navigator.gpu.requestAdapter()).requestDevice();
        device.lost.then((i) => (out.lost = i.message));
        const g = document.createElement('canvas');
        g.width = 3; g.height = 2;
        const ctx = g.getContext('webgpu');
        ctx.configure({ device, format: navigator.gpu.getPreferredCanvasFormat(), alphaMode: 'premultiplied' });
        if (step !== 'configure') {
          const enc = device.createCommandEncoder();
          const pass = enc.beginRenderPass({ colorAttachments: [{ view: ctx.getCurrentTexture().createView(), loadOp: 'clear', clearValue: { r: 1, g: 0, b: 0, a: 1 }, storeOp: 'store' }] });
          pass.end();
          device.queue.submit([enc.finish()]);
        }
        const b = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ });
        await b.mapAsync(GPUMapMode.READ);
        out.ok = true;
      } catch (e) { out.failed = `${e.name}: ${e.message}`; }
      await new Promise((r) => setTimeout(r, 100));
      return out;
    }, step);
    console.log(JSON.stringify(r));
    await page.close();
  }
} finally { await browser.close(); await server.close(); }
