// The harness itself: the browser starts and offers WebGPU and WebGL2 with float render targets.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage } from './harness.mjs';

test('headless Chromium offers WebGPU and WebGL2 with float render targets', async () => {
  const server = await startServer();
  const browser = await launchBrowser();
  try {
    const page = await newPage(browser);
    await page.goto(`${server.url}/tests/pages/blank.html`);
    const caps = await page.evaluate(async () => {
      const adapter = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
      const gl = document.createElement('canvas').getContext('webgl2');
      return {
        webgpu: !!adapter,
        webgl2: !!gl,
        floatTargets: !!(gl && gl.getExtension('EXT_color_buffer_float')),
      };
    });
    assert.deepEqual(caps, { webgpu: true, webgl2: true, floatTargets: true });
  } finally {
    await browser.close();
    await server.close();
  }
});
