// The browser's copy of a 640x480 canvas or camera frame into a WebGL2 texture, by upload call
// (texSubImage2D into an immutable texture, as pixelgrad does, vs texImage2D, which respecifies
// the texture every frame, as TF.js does; for the canvas also its bytes read with getImageData
// and uploaded): uploads/s with a 1-pixel readPixels at the end. The getImageData rows move the
// canvas to the CPU in Chromium, so the canvas rows of round 2 measure a CPU-backed canvas.
// Not a test.
//
//   node web/bench/probe/upload.mjs [--frames N]
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';
import { fakeCamera } from '../lib/camera.mjs';

const i = process.argv.indexOf('--frames');
const FRAMES = i >= 0 ? Number(process.argv[i + 1]) : 60;
const camera = fakeCamera(640, 480);
const server = await startServer(webRoot);
try {
  const browser = await launchBrowser(camera.flags);
  const page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(async (frames) => {
    const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
    const video = document.createElement('video');
    video.muted = true;
    video.srcObject = stream;
    await video.play();
    while (video.readyState < 2) await new Promise((res) => setTimeout(res, 20));
    const canvas = document.createElement('canvas');
    canvas.width = 640;
    canvas.height = 480;
    canvas.getContext('2d').drawImage(video, 0, 0);
    const gl = document.createElement('canvas').getContext('webgl2');
    const fb = gl.createFramebuffer();
    const px = new Uint8Array(4);
    const rate = (src, how) => {
      const t = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, t);
      if (how !== 'image') gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA8, 640, 480);
      const c2d = src.getContext ? src.getContext('2d') : null;
      const one = () => {
        gl.bindTexture(gl.TEXTURE_2D, t);
        if (how === 'bytes') gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, 640, 480, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(c2d.getImageData(0, 0, 640, 480).data.buffer));
        else if (how === 'sub') gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, gl.RGBA, gl.UNSIGNED_BYTE, src);
        else gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, gl.RGBA, gl.UNSIGNED_BYTE, src);
      };
      const read = () => {
        gl.bindFramebuffer(gl.FRAMEBUFFER, fb);
        gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, t, 0);
        gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
      };
      for (let k = 0; k < 5; k++) one();
      read();
      const t0 = performance.now();
      for (let k = 0; k < frames; k++) one();
      read();
      const fps = (1000 * frames) / (performance.now() - t0);
      gl.deleteTexture(t);
      return fps;
    };
    const out = {};
    for (const round of [1, 2]) {
      for (const [name, src] of [['canvas', canvas], ['video', video]]) {
        for (const how of ['sub', 'image', 'bytes']) {
          if (how === 'bytes' && name !== 'canvas') continue;
          const label = { sub: 'texSubImage2D', image: 'texImage2D', bytes: 'getImageData + texSubImage2D' }[how];
          out[`${name} ${label} #${round}`] = rate(src, how);
        }
      }
    }
    stream.getTracks().forEach((t) => t.stop());
    return out;
  }, FRAMES);
  for (const [k, v] of Object.entries(r)) console.log(`${k.padEnd(30)} ${v.toFixed(1)} uploads/s`);
  await browser.close();
} finally {
  await server.close();
  camera.cleanup();
}
