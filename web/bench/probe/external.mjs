// Probe: does this Chromium's WebGPU (SwiftShader here) run importExternalTexture on a camera
// video, and do its texels match copyExternalImageToTexture / a 2D canvas of the same frame?
// Raw WebGPU, no pixelgrad runtime. Not a test.
//
//   node web/bench/probe/external.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, launchBrowser, newPage, webRoot } from '../../tests/harness.mjs';

const W = 160;
const H = 120;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-external-'));
const y4m = path.join(tmp, 'f.y4m');
const y = Buffer.alloc(W * H);
const u = Buffer.alloc((W / 2) * (H / 2));
const v = Buffer.alloc((W / 2) * (H / 2));
for (let r = 0; r < H; r++) for (let c = 0; c < W; c++) y[r * W + c] = 16 + Math.round((219 * (c + r)) / (W + H));
for (let r = 0; r < H / 2; r++) for (let c = 0; c < W / 2; c++) {
  u[r * (W / 2) + c] = 64 + Math.round((128 * c) / (W / 2));
  v[r * (W / 2) + c] = 192 - Math.round((128 * r) / (H / 2));
}
const parts = [Buffer.from(`YUV4MPEG2 W${W} H${H} F30:1 Ip A1:1 C420jpeg\n`)];
for (let i = 0; i < 10; i++) parts.push(Buffer.from('FRAME\n'), y, u, v);
fs.writeFileSync(y4m, Buffer.concat(parts));
const server = await startServer(webRoot);
const browser = await launchBrowser(['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${y4m}`]);
try {
  const page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/blank.html`);
  for (const kind of ['video', 'VideoFrame']) {
  const r = await page.evaluate(async (kind) => {
    const out = { kind };
    try {
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter.requestDevice();
    device.lost.then((i) => (out.lost = i.message));
    device.onuncapturederror = (e) => (out.error = e.error.message);
    const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 160, height: 120 } });
    const video = document.createElement('video');
    video.muted = true;
    video.srcObject = stream;
    await video.play();
    while (video.readyState < 2) await new Promise((r) => setTimeout(r, 20));
    const w = video.videoWidth;
    const h = video.videoHeight;
    const c = document.createElement('canvas');
    c.width = w;
    c.height = h;
    const ctx = c.getContext('2d', { willReadFrequently: true });
    ctx.drawImage(video, 0, 0);
    const ref = ctx.getImageData(0, 0, w, h).data;
    const code = `@group(0) @binding(0) var src: texture_external;
      @group(0) @binding(1) var<storage, read_write> out: array<u32>;
      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
        let i = g.x;
        if (i >= ${w * h}u) { return; }
        let p = textureLoad(src, vec2<u32>(i % ${w}u, i / ${w}u));
        out[i] = pack4x8unorm(p);
      }`;
    const t0 = performance.now();
    const frame = kind === 'VideoFrame' ? new VideoFrame(video) : null;
    const ext = device.importExternalTexture({ source: frame || video });
    const buf = device.createBuffer({ size: 4 * w * h, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const read = device.createBuffer({ size: 4 * w * h, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const pipe = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
    const bg = device.createBindGroup({ layout: pipe.getBindGroupLayout(0), entries: [{ binding: 0, resource: ext }, { binding: 1, resource: { buffer: buf } }] });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bg);
    pass.dispatchWorkgroups(Math.ceil((w * h) / 64));
    pass.end();
    enc.copyBufferToBuffer(buf, 0, read, 0, 4 * w * h);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    out.ms = performance.now() - t0;
    const got = new Uint8Array(read.getMappedRange().slice(0));
    let worst = 0;
    for (let i = 0; i < got.length; i++) if (i % 4 !== 3) worst = Math.max(worst, Math.abs(got[i] - ref[i]));
    out.worst = worst;
    out.sample = [Array.from(got.slice(0, 8)), Array.from(ref.slice(0, 8))];
    stream.getTracks().forEach((t) => t.stop());
    } catch (e) {
      out.failed = `${e.name}: ${e.message}`;
      await new Promise((r) => setTimeout(r, 200));
    }
    return out;
  }, kind);
  console.log(JSON.stringify(r));
  }
} catch (e) {
  console.log(`probe failed: ${e.message}`);
} finally {
  await browser.close();
  await server.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}
