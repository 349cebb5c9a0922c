// Camera capture paths per backend, frames/s (224x224, ImageNet mean/std, NCHW, last frame
// read): pg.fromPixels(video) against VideoFrame(video).copyTo + pg.fromYUV, with a fake
// 640x480 camera. Not a test.
//
//   node web/bench/probe/yuv.mjs [--frames N]
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';
import { fakeCamera } from '../lib/camera.mjs';

const i = process.argv.indexOf('--frames');
const FRAMES = i >= 0 ? Number(process.argv[i + 1]) : 40;
const camera = fakeCamera(640, 480);
const server = await startServer(webRoot);
const flags = camera.flags;
try {
  for (const backend of ['webgpu', 'webgl', 'cpu']) {
    const browser = await launchBrowser(flags);
    try {
      const page = await newPage(browser);
      await page.goto(`${server.url}/tests/pages/blank.html`);
      const r = await page.evaluate(
        async ({ backend, frames }) => {
          const pg = await import('/pkg/index.js');
          await pg.init({ backend, allowSoftware: true });
          const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
          const video = document.createElement('video');
          video.muted = true;
          video.srcObject = stream;
          await video.play();
          while (video.readyState < 2) await new Promise((res) => setTimeout(res, 20));
          const opts = { size: [224, 224], mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
          let buf = null;
          let fmt = '';
          const viaYuv = async () => {
            const f = new VideoFrame(video);
            fmt = f.format;
            if (!buf) buf = new Uint8Array(f.allocationSize());
            const layout = await f.copyTo(buf);
            const cs = f.colorSpace;
            const t = pg.fromYUV({ format: f.format, width: f.codedWidth, height: f.codedHeight, data: buf, layout, matrix: cs.matrix ?? 'bt601', fullRange: !!cs.fullRange }, opts);
            f.close();
            return t;
          };
          const viaPixels = async () => pg.fromPixels(video, opts);
          const rate = async (one) => {
            for (let k = 0; k < 5; k++) {
              const t = await one();
              await t.data();
              t.dispose();
            }
            const t0 = performance.now();
            let t = null;
            for (let k = 0; k < frames; k++) {
              if (t) t.dispose();
              t = await one();
            }
            await t.data();
            t.dispose();
            return (1000 * frames) / (performance.now() - t0);
          };
          const copyOnly = async () => {
            const t0 = performance.now();
            for (let k = 0; k < frames; k++) {
              const f = new VideoFrame(video);
              if (!buf) buf = new Uint8Array(f.allocationSize());
              await f.copyTo(buf);
              f.close();
            }
            return (1000 * frames) / (performance.now() - t0);
          };
          const out = { pixels: await rate(viaPixels), yuv: await rate(viaYuv), pixels2: await rate(viaPixels), yuv2: await rate(viaYuv), copy: await copyOnly() };
          stream.getTracks().forEach((t) => t.stop());
          return { ...out, fmt };
        },
        { backend, frames: FRAMES },
      );
      console.log(`${backend.padEnd(7)} fromPixels(video) ${r.pixels.toFixed(1)} / ${r.pixels2.toFixed(1)} frames/s, VideoFrame.copyTo + fromYUV (${r.fmt}) ${r.yuv.toFixed(1)} / ${r.yuv2.toFixed(1)} frames/s, copyTo alone ${r.copy.toFixed(1)} frames/s`);
    } catch (e) {
      console.log(`${backend}: error ${e.message.split('\n')[0]}`);
    }
    await browser.close();
  }
} finally {
  await server.close();
  camera.cleanup();
}
