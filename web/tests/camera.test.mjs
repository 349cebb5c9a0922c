// The camera demo (web/demo/camera.html) end to end in headless Chromium with a fake camera
// playing a .y4m this test writes: two synthetic classes alternating every half second (a dark
// red pattern and a bright blue one). The test records samples of each class through the
// demo's teach mode (labels from the frame's colour, read on a 2D canvas around each sample),
// trains the head, and requires >= 90 % on held-out frames; the frames/s readout updates, the
// head saves to IndexedDB (and loads back equal) and exports as a download, and no network
// request is made after load.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, launchBrowser, newPage, cspViolations } from './harness.mjs';

const W = 160;
const H = 120;

/** Two classes, 15 frames each, alternating. Y'CbCr 4:2:0 (full range, as C420jpeg). */
function writeY4m(file) {
  const parts = [Buffer.from(`YUV4MPEG2 W${W} H${H} F30:1 Ip A1:1 C420jpeg\n`)];
  for (let f = 0; f < 60; f++) {
    const cls = Math.floor(f / 15) % 2;
    const y = Buffer.alloc(W * H);
    const u = Buffer.alloc((W / 2) * (H / 2));
    const v = Buffer.alloc((W / 2) * (H / 2));
    for (let r = 0; r < H; r++) {
      for (let c = 0; c < W; c++) {
        const t = (f * 3 + c + r) % 40; // moving texture so frames differ within a class
        y[r * W + c] = cls === 0 ? 50 + t : 150 + t;
      }
    }
    u.fill(cls === 0 ? 100 : 200); // class 1: blue
    v.fill(cls === 0 ? 200 : 100); // class 0: red
    parts.push(Buffer.from('FRAME\n'), y, u, v);
  }
  fs.writeFileSync(file, Buffer.concat(parts));
}

let server;
let browser;
let page;
let tmp;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-camera-demo-'));
  const y4m = path.join(tmp, 'classes.y4m');
  writeY4m(y4m);
  server = await startServer();
  browser = await launchBrowser(['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${y4m}`]);
  page = await newPage(browser);
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

for (const backend of ['webgpu', 'webgl']) {
  test(`camera demo on ${backend}: teach two classes from the camera, >= 90 % on held-out frames, no requests`, async () => {
    await page.goto(`${server.url}/demo/camera.html?backend=${backend}&software=1`);
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 60000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', await page.evaluate(() => document.getElementById('status').textContent));
    const r = await page.evaluate(async () => {
      const demo = window.cameraDemo;
      const video = demo.state.video;
      const c = document.createElement('canvas');
      c.width = 8;
      c.height = 8;
      const ctx = c.getContext('2d', { willReadFrequently: true });
      // The class of the frame on screen: red-dominant (0) or blue-dominant (1).
      const truth = () => {
        ctx.drawImage(video, 0, 0, 8, 8);
        const d = ctx.getImageData(0, 0, 8, 8).data;
        let red = 0;
        let blue = 0;
        for (let i = 0; i < d.length; i += 4) {
          red += d[i];
          blue += d[i + 2];
        }
        return red > blue ? 0 : 1;
      };
      const wait = (ms) => new Promise((res) => setTimeout(res, ms));
      const counts = [0, 0];
      for (let tries = 0; tries < 400 && (counts[0] < 12 || counts[1] < 12); tries++) {
        const a = truth();
        const p = demo.addSample(a);
        const b = truth();
        await p;
        if (a !== b || counts[a] >= 12) demo.state.samples.pop();
        else counts[a] += 1;
        await wait(37);
      }
      const history = await demo.train({ epochs: 30 });
      let right = 0;
      let seen = 0;
      const seenClasses = [0, 0];
      for (let tries = 0; tries < 400 && seen < 30; tries++) {
        await wait(41);
        const a = truth();
        const p = demo.predictNow();
        const b = truth();
        const probs = await p;
        if (a !== b) continue;
        seen += 1;
        seenClasses[a] += 1;
        if ((probs[1] > probs[0] ? 1 : 0) === a) right += 1;
      }
      await wait(300);
      return {
        counts,
        loss: history.loss[history.loss.length - 1],
        accuracy: right / seen,
        seen,
        seenClasses,
        fps: Number(document.getElementById('stats').dataset.fps),
        pred: document.getElementById('teach-pred').dataset.class,
        requests: document.getElementById('net').dataset.count,
      };
    });
    console.log(`${backend}: ${JSON.stringify(r)}`);
    assert.deepEqual(r.counts, [12, 12]);
    assert.equal(r.seen, 30);
    assert.ok(r.seenClasses[0] > 0 && r.seenClasses[1] > 0, `held-out frames of both classes: ${r.seenClasses}`);
    assert.ok(r.accuracy >= 0.9, `held-out accuracy ${r.accuracy}`);
    assert.ok(r.fps > 0, 'the frames/s readout updates');
    assert.ok(r.pred === '0' || r.pred === '1', 'the live prediction is shown');
    assert.equal(r.requests, '0', 'no network requests after load');
    assert.deepEqual(await cspViolations(page), [], 'the camera demo runs under the CSP (video from a mediastream, workers)');

    // The personalised head saves to IndexedDB (it loads back with the same weights) and
    // exports as a download; still no request.
    await page.click('#save');
    await page.waitForFunction(() => document.getElementById('status').textContent.includes('saved to indexeddb://camera-teach'), null, { timeout: 30000 });
    const saved = await page.evaluate(async () => {
      const pg = await import('../pkg/index.js');
      const loaded = await pg.loadModel('indexeddb://camera-teach');
      const a = await window.cameraDemo.state.head.getWeights();
      const b = await loaded.getWeights();
      let worst = 0;
      for (const [name, t] of Object.entries(a)) {
        const [x, y] = [await t.data(), await b[name].data()];
        for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
      }
      loaded.dispose();
      return { names: Object.keys(a).sort().join(','), loadedNames: Object.keys(b).sort().join(','), worst };
    });
    assert.ok(saved.names.length > 0, 'the head has weights');
    assert.equal(saved.loadedNames, saved.names, 'the saved head has the same weights');
    assert.equal(saved.worst, 0, 'and the same values');
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.click('#export')]);
    const file = path.join(tmp, `head-${backend}`);
    await download.saveAs(file);
    assert.ok(download.suggestedFilename().startsWith('camera-teach'), download.suggestedFilename());
    assert.ok(fs.statSync(file).size > 100, 'the export holds the weights');
    assert.equal(await page.evaluate(() => document.getElementById('net').dataset.count), '0', 'no request for saving or exporting');
  });
}

test('webgpu camera frames: the 2D-canvas path on a software adapter, after a failed probe and after a device loss that followed a direct copy, direct otherwise', async () => {
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const rt = await pg.init({ backend: 'webgpu', allowSoftware: true });
    const stream = await navigator.mediaDevices.getUserMedia({ video: true });
    const video = document.createElement('video');
    video.muted = true;
    video.srcObject = stream;
    await video.play();
    while (!video.videoWidth) await new Promise((res) => setTimeout(res, 20));
    const t = pg.fromPixels(video, { size: [8, 8] });
    const px = Array.from(await t.data());
    stream.getTracks().forEach((k) => k.stop());
    // The choice itself, on a stand-in for a hardware adapter's runtime.
    const vi = await import('/pkg/videoinput.js');
    localStorage.removeItem('pixelgrad.videoCopyLost');
    const hw = { backend: 'webgpu', _gen: 3, report: { software: false, adapter: 'Test GPU' } };
    const fresh = vi.videoPath(hw).path;
    vi.noteLoss(hw); // a loss without a direct copy on that device says nothing about the copy
    const afterUnrelatedLoss = vi.videoPath(hw).path;
    vi.noteDirectCopy(hw);
    vi.noteLoss(hw);
    const afterLoss = vi.videoPath(hw);
    const other = vi.videoPath({ ...hw, report: { software: false, adapter: 'Other GPU' } }).path;
    localStorage.removeItem('pixelgrad.videoCopyLost');
    // The probe: the first direct copy on a device is checked; its error sends later frames
    // through the canvas, its success keeps them direct, on that device generation only.
    const gpu = { backend: 'webgpu', _gen: 1, report: { software: false, adapter: 'Probe GPU' } };
    const before = vi.videoPath(gpu);
    const first = vi.probeStart(gpu);
    const running = vi.videoPath(gpu);
    const second = vi.probeStart(gpu);
    vi.probeEnd(gpu, null);
    const passed = vi.videoPath(gpu);
    const bad = { backend: 'webgpu', _gen: 1, report: { software: false, adapter: 'Bad GPU' } };
    vi.probeStart(bad);
    vi.probeEnd(bad, { message: 'copyExternalImageToTexture: invalid source' });
    const failed = vi.videoPath(bad);
    bad._gen = 2; // a new device after a recovery is probed again
    const nextDevice = vi.videoPath(bad);
    return { software: rt.report.software, videoInput: rt.report.videoInput, lost: rt.lost, px, fresh, afterUnrelatedLoss, afterLoss, other, before, first, running, second, passed, failed, nextDevice };
  });
  assert.equal(r.software, true, 'the harness has SwiftShader');
  assert.equal(r.videoInput.path, 'canvas', JSON.stringify(r.videoInput));
  assert.match(r.videoInput.reason, /software adapter/);
  assert.equal(r.lost, null);
  assert.equal(r.px.length, 3 * 8 * 8);
  assert.ok(r.px.some((v) => v > 0.05), 'the frame reached the tensor');
  assert.equal(r.fresh, 'direct');
  assert.equal(r.afterUnrelatedLoss, 'direct');
  assert.equal(r.afterLoss.path, 'canvas');
  assert.match(r.afterLoss.reason, /device loss before/);
  assert.equal(r.other, 'direct');
  assert.equal(r.videoInput.probe, 'skipped', 'no probe on a software adapter (it would destroy the instance)');
  assert.deepEqual([r.before.path, r.before.probe], ['direct', 'pending']);
  assert.equal(r.first, true, 'the first direct copy is the probe');
  assert.deepEqual([r.running.path, r.running.probe], ['direct', 'running']);
  assert.equal(r.second, false, 'one probe per device');
  assert.deepEqual([r.passed.path, r.passed.probe], ['direct', 'passed'], 'the direct path is used where the probe passes');
  assert.match(r.passed.reason, /the probe passed/);
  assert.deepEqual([r.failed.path, r.failed.probe], ['canvas', 'failed'], 'the canvas path after a failed probe');
  assert.match(r.failed.reason, /direct-copy probe failed on this device: copyExternalImageToTexture: invalid source/);
  assert.deepEqual([r.nextDevice.path, r.nextDevice.probe], ['direct', 'pending']);
});

test('webgpu camera frames: a probe made to fail (test hook) sends the frames through the 2D canvas, and the report says so', async () => {
  await page.goto(`${server.url}/tests/pages/blank.html`);
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    const vi = await import('/pkg/videoinput.js');
    const rt = await pg.init({ backend: 'webgpu', allowSoftware: true });
    const stream = await navigator.mediaDevices.getUserMedia({ video: true });
    const video = document.createElement('video');
    video.muted = true;
    video.srcObject = stream;
    await video.play();
    while (!video.videoWidth) await new Promise((res) => setTimeout(res, 20));
    vi.__setVideoProbe('fail'); // the probe fails, here before any direct copy (which SwiftShader would not survive)
    let px;
    let again;
    try {
      px = Array.from(await pg.fromPixels(video, { size: [8, 8] }).data());
      again = { ...rt.report.videoInput };
      await pg.fromPixels(video, { size: [8, 8] }).data();
    } finally {
      vi.__setVideoProbe(null);
      stream.getTracks().forEach((k) => k.stop());
    }
    return { videoInput: rt.report.videoInput, again, lost: rt.lost, px };
  });
  assert.equal(r.videoInput.path, 'canvas', JSON.stringify(r.videoInput));
  assert.equal(r.videoInput.probe, 'failed');
  assert.match(r.videoInput.reason, /direct-copy probe failed on this device: failure forced by the test hook/);
  assert.deepEqual(r.again, r.videoInput, 'later frames stay on the canvas path');
  assert.equal(r.lost, null, 'the runtime survived: no direct copy was made');
  assert.equal(r.px.length, 3 * 8 * 8);
  assert.ok(r.px.some((v) => v > 0.05), 'the frame reached the tensor through the canvas');
});

test('camera demo classifies live frames with an imported ONNX model (top-3, per-stage times)', async () => {
  await page.goto(`${server.url}/demo/camera.html?backend=webgpu&software=1`);
  await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 60000 });
  const r = await page.evaluate(async () => {
    const pg = await import('/pkg/index.js');
    // An ONNX classifier made in the page (no download): a small conv net exported by pixelgrad.
    const m = pg.sequential([
      pg.layers.conv2d({ filters: 4, kernelSize: 3, inputShape: [32, 32, 3], activation: 'relu' }),
      pg.layers.flatten(),
      pg.layers.dense({ units: 5 }),
    ], { seed: 2 });
    const bytes = await m.toOnnx();
    await window.cameraDemo.loadOnnx(bytes);
    const inputs = window.cameraDemo.state.onnx;
    const wait = (ms) => new Promise((res) => setTimeout(res, ms));
    // The first frame compiles the model's pipelines (slow on SwiftShader): wait for two
    // classified frames after the first.
    const classified = () => document.querySelectorAll('#top li').length === 3;
    for (let i = 0; i < 600 && !classified(); i++) await wait(50);
    const frames0 = window.cameraDemo.state.stats.frames;
    for (let i = 0; i < 600 && window.cameraDemo.state.stats.frames < frames0 + 2; i++) await wait(50);
    // Teach on the backbone: the worker keeps each sample's ONNX features on its device and
    // trains a dense head on them (no frame is read back); the page's head predicts.
    const demo = window.cameraDemo;
    for (let i = 0; i < 4; i++) await demo.addSample(i % 2);
    const taught = await demo.train({ epochs: 2 });
    const probs = await demo.predictNow();
    return {
      taught: { epochs: taught.loss.length, finite: taught.loss.every(Number.isFinite), probs: probs.length },
      size: inputs.size,
      top: Array.from(document.querySelectorAll('#top li'), (li) => li.textContent),
      frames: window.cameraDemo.state.stats.frames - frames0,
      stats: document.getElementById('stats').textContent,
      status: document.getElementById('status').textContent,
      requests: document.getElementById('net').dataset.count,
    };
  });
  console.log(`onnx: ${JSON.stringify(r)}`);
  assert.deepEqual(r.taught, { epochs: 2, finite: true, probs: 2 }, 'teach on the ONNX backbone');
  assert.deepEqual(r.size, [32, 32]);
  assert.equal(r.top.length, 3, r.top.join('; '));
  assert.ok(r.top.every((t) => /^class [0-4]: \d+\.\d%$/.test(t)), r.top.join('; '));
  assert.ok(r.frames >= 2, 'frames keep being classified');
  assert.match(r.stats, /frames\/s · capture \+ preprocess [\d.]+ ms · inference [\d.]+ ms · post-process \+ read [\d.]+ ms/);
  assert.equal(r.requests, '0');
  assert.deepEqual(await cspViolations(page), []);
});
