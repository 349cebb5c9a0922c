// The harness itself: the browser starts and offers WebGPU and WebGL2 with float render targets,
// and pages are served with the security headers (CSP, COOP/COEP: cross-origin isolated).
import test from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, cspViolations } from './harness.mjs';

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

test('pages are cross-origin isolated and run under the CSP: no inline script, blob: workers allowed', async () => {
  const server = await startServer();
  const browser = await launchBrowser();
  try {
    const page = await newPage(browser);
    await page.goto(`${server.url}/tests/pages/blank.html`);
    const r = await page.evaluate(async () => {
      const violation = new Promise((resolve) => document.addEventListener('securitypolicyviolation', (e) => resolve(e.violatedDirective), { once: true }));
      const s = document.createElement('script');
      s.textContent = 'window.inlineRan = true';
      document.body.append(s);
      const url = URL.createObjectURL(new Blob(['postMessage([self.crossOriginIsolated, typeof SharedArrayBuffer])'], { type: 'text/javascript' }));
      const worker = await new Promise((resolve, reject) => {
        const w = new Worker(url);
        w.onmessage = (e) => resolve(e.data);
        w.onerror = (e) => reject(new Error(e.message));
      });
      return { isolated: self.crossOriginIsolated, sab: typeof SharedArrayBuffer, inlineRan: window.inlineRan === true, violated: await violation, worker };
    });
    assert.deepEqual(r, { isolated: true, sab: 'function', inlineRan: false, violated: 'script-src-elem', worker: [true, 'function'] });
    assert.deepEqual((await cspViolations(page)).map((v) => v.split(' ')[0]), ['script-src-elem']);
  } finally {
    await browser.close();
    await server.close();
  }
});
