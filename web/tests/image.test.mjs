// `pg.fromPixels` in headless Chromium on webgpu, webgl and cpu: canvas, ImageBitmap, ImageData
// and a live camera (Chromium's fake camera playing a .y4m this test writes from known
// frames) against the host reference (`fromPixels(ImageData)` on the cpu runtime, which runs
// pixelgrad_core::image::host), for fill / cover / contain, both layouts, 2x and 5x
// downscales; and bad input (tainted canvas, zero-sized video, closed VideoFrame, size 0)
// as JS Errors naming the problem.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, launchBrowser, newPage } from './harness.mjs';

// The fake camera's frames: 160x120, every frame the same smooth pattern (so whichever frame
// the video element shows, its reference is the same), written as 4:2:0 Y'CbCr.
const W = 160;
const H = 120;
function writeY4m(file, frames = 30) {
  const y = Buffer.alloc(W * H);
  const u = Buffer.alloc((W / 2) * (H / 2));
  const v = Buffer.alloc((W / 2) * (H / 2));
  for (let r = 0; r < H; r++) for (let c = 0; c < W; c++) y[r * W + c] = 16 + Math.round((219 * (c + r)) / (W + H));
  for (let r = 0; r < H / 2; r++) {
    for (let c = 0; c < W / 2; c++) {
      u[r * (W / 2) + c] = 64 + Math.round((128 * c) / (W / 2));
      v[r * (W / 2) + c] = 192 - Math.round((128 * r) / (H / 2));
    }
  }
  const parts = [Buffer.from(`YUV4MPEG2 W${W} H${H} F30:1 Ip A1:1 C420jpeg\n`)];
  for (let i = 0; i < frames; i++) parts.push(Buffer.from('FRAME\n'), y, u, v);
  fs.writeFileSync(file, Buffer.concat(parts));
}

let server;
let browser;
let page;
let tmp;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pixelgrad-camera-'));
  const y4m = path.join(tmp, 'frames.y4m');
  writeY4m(y4m);
  // square.svg is loaded from another origin below (to taint a canvas): the page's CSP must
  // allow images from there, and under COEP the image must say other origins may embed it
  server = await startServer(undefined, 0, { crossOrigin: ['/tests/pages/square.svg'], imageOrigins: ['http://localhost:*'] });
  browser = await launchBrowser([
    '--use-fake-device-for-media-stream',
    '--use-fake-ui-for-media-stream',
    `--use-file-for-fake-video-capture=${y4m}`,
  ]);
  page = await newPage(browser);
  await page.goto(`${server.url}/tests/pages/api.html`);
  await page.waitForFunction(() => window.pgReady === true, null, { timeout: 30000 });
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function inPage(fn, arg) {
  return page.evaluate(([src, a]) => {
    // eslint-disable-next-line no-new-func
    const f = new Function('pg', 'arg', `return (${src})(pg, arg);`);
    return f(window.pg, a);
  }, [fn.toString(), arg]);
}

/** Every option set the tests compare: 2x and 5x down, three fits, both layouts. */
const SPECS = [];
for (const size of [[60, 80], [24, 32]]) {
  for (const fit of ['fill', 'cover', 'contain']) {
    for (const layout of ['nchw', 'nhwc']) {
      SPECS.push({ size, fit, layout, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225], pad: 0.5 });
    }
  }
}
SPECS.push({ size: [30, 40], channels: 1, mean: 0.5, std: 0.25 });
SPECS.push({ size: [30, 40], channels: 4, layout: 'nhwc', fit: 'contain' });

/**
 * In the page: for each backend, the worst |fromPixels(source) - reference| over SPECS, in
 * units of 1/255 after normalisation (value differences times min std times 255), where the
 * reference is fromPixels(ImageData of the same pixels) on the cpu runtime. `make` builds the
 * source; `pixels(source)` its RGBA bytes as the page sees them.
 */
async function compareSource(kind, method = 'fromPixels') {
  return inPage(async (pg, { kind, specs, method }) => {
    const W = 160;
    const H = 120;
    let source;
    if (kind === 'video') {
      const stream = await navigator.mediaDevices.getUserMedia({ video: { width: W, height: H } });
      source = document.createElement('video');
      source.muted = true;
      source.srcObject = stream;
      await source.play();
      while (source.videoWidth === 0 || source.readyState < 2) await new Promise((r) => setTimeout(r, 20));
    } else {
      source = document.createElement('canvas');
      source.width = W;
      source.height = H;
      const img = new ImageData(W, H);
      for (let i = 0; i < W * H; i++) {
        const x = i % W;
        const y = Math.floor(i / W);
        img.data[4 * i] = (x * 255) / W;
        img.data[4 * i + 1] = (y * 255) / H;
        img.data[4 * i + 2] = ((x * 7 + y * 13) % 64) * 4;
        img.data[4 * i + 3] = 255;
      }
      source.getContext('2d').putImageData(img, 0, 0);
      if (kind === 'bitmap') source = await createImageBitmap(source);
    }
    // The pixels as the page sees them (the same frame: every camera frame is identical).
    const c = document.createElement('canvas');
    c.width = W;
    c.height = H;
    const ctx = c.getContext('2d');
    ctx.drawImage(source, 0, 0);
    const data = ctx.getImageData(0, 0, W, H);
    await pg.init({ backend: 'cpu' });
    const ref = [];
    for (const s of specs) {
      const t = pg.fromPixels(data, s);
      ref.push({ shape: t.shape, geometry: t.geometry, v: await t.data() });
    }
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      let worst = 0;
      const problems = [];
      for (let k = 0; k < specs.length; k++) {
        const s = specs[k];
        const t = await pg[method](source, s);
        if (JSON.stringify(t.shape) !== JSON.stringify(ref[k].shape)) problems.push(`${JSON.stringify(s)}: shape ${t.shape} vs ${ref[k].shape}`);
        if (JSON.stringify(t.geometry) !== JSON.stringify(ref[k].geometry)) problems.push(`${JSON.stringify(s)}: geometry differs`);
        const v = await t.data();
        const std = Math.min(...[].concat(s.std ?? 1));
        for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(v[i] - ref[k].v[i]) * std * 255);
        t.dispose();
      }
      out[backend] = { worst, problems, n: specs.length };
    }
    if (kind === 'video') {
      // The camera frame's own format: I420 or NV12 sends fromPixelsAsync through fromYUV.
      const f = new VideoFrame(source);
      out.format = f.format;
      f.close();
      source.srcObject.getTracks().forEach((t) => t.stop());
    }
    return out;
  }, { kind, specs: SPECS, method });
}

for (const kind of ['canvas', 'bitmap', 'video']) {
  test(`fromPixels(${kind}) on webgpu, webgl and cpu equals the host reference within 1/255`, async () => {
    const { format: _format, ...r } = await compareSource(kind);
    for (const [backend, res] of Object.entries(r)) {
      console.log(`${kind} on ${backend}: ${res.n} option sets, worst difference ${res.worst.toFixed(4)} / 255`);
      assert.deepEqual(res.problems, [], `${kind} on ${backend}`);
      assert.ok(res.worst <= 1, `${kind} on ${backend}: worst difference ${res.worst} / 255`);
    }
  });
}

test('fromPixelsAsync(video) takes VideoFrame.copyTo + fromYUV on webgpu and webgl and equals the host reference within 1/255', async () => {
  const r = await compareSource('video', 'fromPixelsAsync');
  const { format, ...backends } = r;
  console.log(`camera frames arrive as ${format}`);
  assert.ok(['I420', 'NV12'].includes(format), `the fake camera's frames are ${format}, so fromYUV was not exercised`);
  for (const [backend, res] of Object.entries(backends)) {
    console.log(`fromPixelsAsync(video) on ${backend}: ${res.n} option sets, worst difference ${res.worst.toFixed(4)} / 255`);
    assert.deepEqual(res.problems, [], backend);
    assert.ok(res.worst <= 1, `fromPixelsAsync(video) on ${backend}: worst difference ${res.worst} / 255`);
  }
});

test("fromPixels dtype: 'float16' within f16 rounding and 'uint8' the nearest byte of the host reference on webgpu, webgl and cpu", async () => {
  const r = await inPage(async (pg, { specs }) => {
    const W = 160;
    const H = 120;
    const canvas = document.createElement('canvas');
    canvas.width = W;
    canvas.height = H;
    const img = new ImageData(W, H);
    for (let i = 0; i < W * H; i++) {
      const x = i % W;
      const y = Math.floor(i / W);
      img.data[4 * i] = (x * 255) / W;
      img.data[4 * i + 1] = (y * 255) / H;
      img.data[4 * i + 2] = ((x * 7 + y * 13) % 64) * 4;
      img.data[4 * i + 3] = 255;
    }
    canvas.getContext('2d').putImageData(img, 0, 0);
    const data = canvas.getContext('2d').getImageData(0, 0, W, H);
    const plain = (s) => ({ ...s, mean: undefined, std: undefined });
    await pg.init({ backend: 'cpu' });
    const ref = [];
    for (const s of specs) {
      ref.push({ norm: await pg.fromPixels(data, s).data(), raw: await pg.fromPixels(data, plain(s)).data() });
    }
    const f16 = new Float32Array(1);
    const msg = (f) => {
      try {
        f();
        return 'no error';
      } catch (e) {
        return e instanceof Error ? e.message : `not an Error: ${e}`;
      }
    };
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      const res = { f16: 0, u8: 0, problems: [], errors: {} };
      for (let k = 0; k < specs.length; k++) {
        const s = specs[k];
        for (const [dtype, opts] of [['float16', s], ['uint8', plain(s)]]) {
          let t;
          try {
            t = pg.fromPixels(canvas, { ...opts, dtype });
          } catch (e) {
            res.errors[dtype] = e.message;
            continue;
          }
          if (t.dtype !== dtype) res.problems.push(`${dtype}: tensor dtype ${t.dtype}`);
          const v = await t.data();
          if (dtype === 'uint8') {
            if (!(v instanceof Uint8Array)) res.problems.push(`uint8 data() is ${Object.prototype.toString.call(v)}`);
            // The nearest byte of the reference (either neighbour within 1e-3 of a tie).
            for (let i = 0; i < v.length; i++) res.u8 = Math.max(res.u8, Math.abs(v[i] - ref[k].raw[i] * 255));
          } else {
            // Within half an f16 ulp of the reference (plus 1e-4 for the f32 pipeline).
            for (let i = 0; i < v.length; i++) {
              const want = ref[k].norm[i];
              f16[0] = Math.abs(want);
              const e = Math.max(Math.pow(2, Math.floor(Math.log2(Math.max(f16[0], Math.pow(2, -14)))) - 11), 0);
              res.f16 = Math.max(res.f16, (Math.abs(v[i] - want) - 1e-4) / e);
            }
          }
          t.dispose();
        }
      }
      res.errors.meanWithU8 = msg(() => pg.fromPixels(canvas, { size: [4, 4], dtype: 'uint8', mean: 0.5 }));
      res.errors.badDtype = msg(() => pg.fromPixels(canvas, { size: [4, 4], dtype: 'int8' }));
      out[backend] = res;
    }
    return out;
  }, { specs: SPECS });
  for (const [backend, res] of Object.entries(r)) {
    console.log(`dtype on ${backend}: float16 worst ${res.f16.toFixed(3)} half-ulps, uint8 worst |byte - 255 ref| ${res.u8.toFixed(4)}; errors ${JSON.stringify(res.errors)}`);
    assert.deepEqual(res.problems, [], backend);
    assert.match(res.errors.meanWithU8, /fromPixels: mean cannot be given with dtype 'uint8'/, backend);
    assert.match(res.errors.badDtype, /dtype 'int8' is not one of float32, float16, uint8/, backend);
    assert.equal(res.errors.float16, undefined, `${backend} float16`);
    assert.ok(res.f16 <= 1, `${backend}: float16 off by ${res.f16} half-ulps`);
    assert.equal(res.errors.uint8, undefined, `${backend} uint8`);
    assert.ok(res.u8 <= 0.501, `${backend}: uint8 off by ${res.u8} from 255 * reference`);
  }
});

test('pg.concat joins fromPixels tensors on the device, and model.fit on that device tensor equals fit on the same host values', async () => {
  const r = await inPage(async (pg) => {
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      const n = 10;
      const xs = [];
      for (let k = 0; k < n; k++) {
        const img = new ImageData(8, 8);
        for (let i = 0; i < 64; i++) {
          img.data[4 * i] = (k * 50 + i * 3) % 256;
          img.data[4 * i + 1] = (k * 20) % 256;
          img.data[4 * i + 2] = k % 2 ? 255 : 0;
          img.data[4 * i + 3] = 255;
        }
        xs.push(pg.fromPixels(img, { size: [4, 4], layout: 'nhwc' }));
      }
      const x = pg.concat(xs, 0);
      const joined = await x.data();
      const parts = await Promise.all(xs.map((t) => t.data()));
      let same = x.shape.join() === [n, 4, 4, 3].join();
      parts.forEach((p, k) => p.forEach((v, i) => (same = same && joined[k * 48 + i] === v)));
      const y = pg.tensor(Int32Array.from({ length: n }, (_, k) => k % 2), [n]);
      const hist = async (input) => {
        const m = pg.sequential([pg.layers.flatten({ inputShape: [4, 4, 3] }), pg.layers.dense({ units: 2 })], { seed: 1 });
        m.compile({ optimizer: pg.optimizers.adam(1e-2), loss: 'softmaxCrossEntropy' });
        const h = await m.fit(input, y, { epochs: 3, batchSize: 4, seed: 5, checkpointEvery: 0 });
        m.dispose();
        return h.history.loss;
      };
      const onDevice = await hist(x);
      const onHost = await hist(pg.tensor(joined, [n, 4, 4, 3]));
      out[backend] = { same, worst: Math.max(...onDevice.map((v, k) => Math.abs(v - onHost[k]))), onDevice };
      xs.forEach((t) => t.dispose());
      x.dispose();
    }
    return out;
  });
  for (const [backend, res] of Object.entries(r)) {
    console.log(`concat + fit on device tensors, ${backend}: ${JSON.stringify(res)}`);
    assert.ok(res.same, `${backend}: concat equals the parts`);
    assert.ok(res.worst <= 1e-5, `${backend}: fit on the device tensor differs from fit on the host values by ${res.worst}`);
  }
});

test('fromYUV: I420 and NV12 planes (strided, and as VideoFrame.copyTo lays them out) equal fromPixels of the same frame within 1/255', async () => {
  const r = await inPage(async (pg, { specs }) => {
    const W = 37;
    const H = 23;
    const cw = Math.ceil(W / 2);
    const ch = Math.ceil(H / 2);
    const ys = W + 3;
    const y = new Uint8Array(ys * H);
    for (let i = 0; i < y.length; i++) y[i] = 16 + ((i * 37) % 220);
    const u = new Uint8Array(cw * ch);
    const v = new Uint8Array(cw * ch);
    for (let i = 0; i < u.length; i++) {
      u[i] = 40 + ((i * 53) % 180);
      v[i] = 30 + ((i * 71) % 200);
    }
    // The reference pixels: BT.601 limited range, nearest chroma, rounded to bytes.
    const img = new ImageData(W, H);
    for (let r = 0; r < H; r++) {
      for (let c = 0; c < W; c++) {
        const k = Math.floor(r / 2) * cw + Math.floor(c / 2);
        const Y = (y[r * ys + c] - 16) / 219;
        const cb = (u[k] - 128) / 224;
        const cr = (v[k] - 128) / 224;
        const R = Y + 2 * (1 - 0.299) * cr;
        const B = Y + 2 * (1 - 0.114) * cb;
        const G = (Y - 0.299 * R - 0.114 * B) / (1 - 0.299 - 0.114);
        const o = 4 * (r * W + c);
        [R, G, B].forEach((x, j) => (img.data[o + j] = Math.round(Math.min(1, Math.max(0, x)) * 255)));
        img.data[o + 3] = 255;
      }
    }
    const uv = new Uint8Array(2 * u.length);
    u.forEach((x, i) => {
      uv[2 * i] = x;
      uv[2 * i + 1] = v[i];
    });
    // NV12 as one buffer with offsets, the way VideoFrame.copyTo describes it.
    const data = new Uint8Array(8 + y.length + uv.length);
    data.set(y, 8);
    data.set(uv, 8 + y.length);
    const frames = {
      i420: { format: 'I420', width: W, height: H, y, u, v, yStride: ys },
      nv12: { format: 'NV12', width: W, height: H, data, layout: [{ offset: 8, stride: ys }, { offset: 8 + y.length, stride: 2 * cw }] },
    };
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      let worst = 0;
      const problems = [];
      for (const s of specs) {
        const ref = pg.fromPixels(img, s);
        const want = await ref.data();
        for (const [name, f] of Object.entries(frames)) {
          const t = pg.fromYUV(f, s);
          if (JSON.stringify(t.shape) !== JSON.stringify(ref.shape)) problems.push(`${name} ${JSON.stringify(s)}: shape ${t.shape} vs ${ref.shape}`);
          if (JSON.stringify(t.geometry) !== JSON.stringify(ref.geometry)) problems.push(`${name} ${JSON.stringify(s)}: geometry differs`);
          const got = await t.data();
          const std = Math.min(...[].concat(s.std ?? 1));
          for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) * std * 255);
          t.dispose();
        }
        ref.dispose();
      }
      const errors = [];
      const bad = [
        [{ format: 'YUY2', width: W, height: H, y, u, v }, /I420 or NV12/],
        [{ format: 'I420', width: W, height: H, y, u: u.subarray(1), v }, /too small/],
        [{ format: 'I420', width: 0, height: H, y, u, v }, /0x23/],
        [{ format: 'I420', width: W, height: H, y: [1, 2], u, v }, /Uint8Array/],
        [{ format: 'NV12', width: W, height: H, data, layout: [{ offset: 8, stride: ys }] }, /layout/],
        [{ format: 'I420', width: W, height: H, y, u, v, matrix: 'bt2020' }, /matrix 'bt2020'/],
      ];
      for (const [f, re] of bad) {
        try {
          pg.fromYUV(f, { size: [8, 8] });
          errors.push(`no error for ${JSON.stringify({ ...f, y: undefined, u: undefined, v: undefined, data: undefined })}`);
        } catch (e) {
          if (!(e instanceof Error) || !new RegExp(re.source).test(e.message)) errors.push(`${e && e.message} does not match ${re}`);
        }
      }
      out[backend] = { worst, problems, errors };
    }
    return out;
  }, { specs: [{}, { size: [12, 16], fit: 'contain', layout: 'nhwc', pad: 0.5 }, { size: [9, 9], fit: 'cover', mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] }, { size: [8, 10], channels: 1 }] });
  for (const [backend, res] of Object.entries(r)) {
    console.log(`fromYUV on ${backend}: worst difference ${res.worst.toFixed(4)} / 255`);
    assert.deepEqual(res.problems, [], backend);
    assert.deepEqual(res.errors, [], backend);
    assert.ok(res.worst <= 1, `fromYUV on ${backend}: worst difference ${res.worst} / 255`);
  }
});

test('fromPixels: bad input is a JS Error naming the problem, on every backend', async () => {
  const origin = new URL(server.url);
  // Same port, other host name: another origin, so an image from there taints a canvas.
  const foreign = `http://localhost:${origin.port}/tests/pages/square.svg`;
  const r = await inPage(async (pg, foreignImage) => {
    const msg = (f) => {
      try {
        f();
        return 'no error';
      } catch (e) {
        return e instanceof Error ? e.message : `not an Error: ${e}`;
      }
    };
    const tainted = document.createElement('canvas');
    tainted.width = 8;
    tainted.height = 8;
    // A cross-origin image without CORS taints the canvas it is drawn on.
    const img = new Image();
    const c = document.createElement('canvas');
    c.width = 16;
    c.height = 16;
    c.getContext('2d').fillRect(0, 0, 16, 16);
    img.src = foreignImage;
    const loaded = await new Promise((res) => {
      img.onload = () => res(true);
      img.onerror = () => res(false);
    });
    const out = { loaded };
    if (loaded) tainted.getContext('2d').drawImage(img, 0, 0);
    const frame = new VideoFrame(c, { timestamp: 0 });
    frame.close();
    const rejection = async (f) => {
      try {
        await f();
        return 'no error';
      } catch (e) {
        return e instanceof Error ? e.message : `not an Error: ${e}`;
      }
    };
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      out[backend] = {
        tainted: loaded ? msg(() => pg.fromPixels(tainted, { size: [4, 4] })) : 'image did not load',
        video: msg(() => pg.fromPixels(document.createElement('video'))),
        frame: msg(() => pg.fromPixels(frame)),
        zero: msg(() => pg.fromPixels(c, { size: [0, 4] })),
        unknown: msg(() => pg.fromPixels({ width: 4, height: 4 })),
        option: msg(() => pg.fromPixels(c, { sise: [4, 4] })),
        ok: pg.fromPixels(c, { size: [4, 4] }).shape,
        asyncFrame: await rejection(() => pg.fromPixelsAsync(frame)),
        asyncVideo: await rejection(() => pg.fromPixelsAsync(document.createElement('video'))),
        asyncZero: await rejection(() => pg.fromPixelsAsync(c, { size: [0, 4] })),
      };
    }
    return out;
  }, `${foreign}?${Date.now()}`);
  assert.ok(r.loaded, 'the cross-origin image loaded');
  for (const backend of ['webgpu', 'webgl', 'cpu']) {
    const e = r[backend];
    assert.match(e.tainted, /fromPixels: .*tainted/, `${backend}: ${e.tainted}`);
    assert.match(e.video, /fromPixels: the video is 0x0 pixels/, `${backend}: ${e.video}`);
    assert.match(e.frame, /fromPixels: the VideoFrame is closed/, `${backend}: ${e.frame}`);
    assert.match(e.zero, /fromPixels: size \[0, 4\] has a zero side/, `${backend}: ${e.zero}`);
    assert.match(e.unknown, /fromPixels: unsupported source/, `${backend}: ${e.unknown}`);
    assert.match(e.option, /unknown option 'sise'/, `${backend}: ${e.option}`);
    assert.deepEqual(e.ok, [1, 3, 4, 4]);
    assert.match(e.asyncFrame, /fromPixelsAsync: the VideoFrame is closed/, `${backend}: ${e.asyncFrame}`);
    assert.match(e.asyncVideo, /fromPixelsAsync: the video is 0x0 pixels/, `${backend}: ${e.asyncVideo}`);
    assert.match(e.asyncZero, /size \[0, 4\] has a zero side/, `${backend}: ${e.asyncZero}`);
  }
});

test('topk, softmax, nonMaxSuppression and resizeBilinear on the device match a host reference', async () => {
  const r = await inPage(async (pg) => {
    // Host references with the engine's rules: larger first, ties in index order; NMS drops
    // boxes whose IoU with a selected box exceeds the threshold, scores must exceed scoreThreshold.
    const order = (s) => Array.from(s.keys()).sort((a, b) => s[b] - s[a] || a - b);
    const iou = (b, i, j) => {
      const c = (k) => [Math.min(b[4 * k], b[4 * k + 2]), Math.min(b[4 * k + 1], b[4 * k + 3]), Math.max(b[4 * k], b[4 * k + 2]), Math.max(b[4 * k + 1], b[4 * k + 3])];
      const [a, d] = [c(i), c(j)];
      const iw = Math.max(0, Math.min(a[2], d[2]) - Math.max(a[0], d[0]));
      const ih = Math.max(0, Math.min(a[3], d[3]) - Math.max(a[1], d[1]));
      const inter = iw * ih;
      const union = (a[2] - a[0]) * (a[3] - a[1]) + (d[2] - d[0]) * (d[3] - d[1]) - inter;
      return union > 0 ? inter / union : 0;
    };
    const nms = (b, s, max, thr, st) => {
      const out = [];
      for (const i of order(s)) {
        if (out.length === max) break;
        if (st !== undefined && !(s[i] > st)) continue;
        if (out.every((j) => iou(b, i, j) <= thr)) out.push(i);
      }
      while (out.length < max) out.push(-1);
      return out;
    };
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      const res = [];
      for (let trial = 0; trial < 4; trial++) {
        const n = 24;
        const b = new Float32Array(4 * n);
        // Quantised scores give ties; clustered boxes give overlaps.
        const s = Float32Array.from({ length: n }, () => Math.round(rand() * 6) / 6);
        for (let i = 0; i < n; i++) {
          const cx = Math.round(rand() * 4) * 10;
          const cy = Math.round(rand() * 2) * 10;
          b.set([cx + rand() * 4, cy + rand() * 4, cx + 8 + rand() * 4, cy + 8 + rand() * 4], 4 * i);
        }
        const st = trial === 3 ? 2 : trial === 2 ? 0.5 : undefined; // trial 3: nothing passes
        const got = Array.from(await pg.nonMaxSuppression(pg.tensor(b, [n, 4]), pg.tensor(s, [n]), { maxOutputs: 10, iouThreshold: 0.3, scoreThreshold: st }).data());
        res.push({ got, want: nms(b, s, 10, 0.3, st) });
        const { values, indices } = pg.topk(pg.tensor(s, [1, n]), 5);
        const o = order(s).slice(0, 5);
        res.push({ got: Array.from(await indices.data()), want: o });
        res.push({ got: Array.from(await values.data()), want: o.map((i) => s[i]) });
      }
      const p = await pg.softmax(pg.tensor([1, 2, 3, 4], [2, 2])).data();
      const e = Math.exp(1) / (1 + Math.exp(1));
      const up = await pg.resizeBilinear(pg.tensor([0, 1], [1, 1, 1, 2]), [1, 4]).data();
      res.push({ got: Array.from(p, (v) => Math.round(v * 1e5) / 1e5), want: [1 - e, e, 1 - e, e].map((v) => Math.round(v * 1e5) / 1e5) });
      res.push({ got: Array.from(up), want: [0, 0.25, 0.75, 1] });
      out[backend] = res;
    }
    return out;
  });
  for (const [backend, res] of Object.entries(r)) {
    for (const { got, want } of res) assert.deepEqual(got.map((v) => Math.round(v * 1e5) / 1e5), want.map((v) => Math.round(v * 1e5) / 1e5), backend);
  }
});

test('model.activations and drawActivations: any layer\'s output, from the device', async () => {
  const r = await inPage(async (pg) => {
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      const m = pg.sequential([
        pg.layers.conv2d({ filters: 2, kernelSize: 3, inputShape: [6, 6, 1], activation: 'relu' }),
        pg.layers.flatten(),
        pg.layers.dense({ units: 4 }),
      ], { seed: 5 });
      const x = pg.tensor(Float32Array.from({ length: 36 }, (_, i) => Math.sin(i)), [1, 6, 6, 1]);
      const a0 = m.activations(x, 0);
      const a2 = await m.activations(x, 2).data();
      const p = await m.predict(x).data();
      const v0 = await a0.data();
      const c = document.createElement('canvas');
      await m.drawActivations(x, 0, c);
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const colours = new Set();
      for (let i = 0; i < px.length; i += 4) colours.add(`${px[i]},${px[i + 1]},${px[i + 2]}`);
      let err = '';
      try {
        m.activations(x, 3);
      } catch (e) {
        err = e.message;
      }
      out[backend] = { shape: a0.shape, relu: Array.from(v0).every((v) => v >= 0), same: Array.from(a2).every((v, i) => Math.abs(v - p[i]) < 1e-5), size: [c.width, c.height], colours: colours.size, err };
    }
    return out;
  });
  for (const [backend, o] of Object.entries(r)) {
    assert.deepEqual(o.shape, [1, 4, 4, 2], backend);
    assert.ok(o.relu && o.same, `${backend}: ${JSON.stringify(o)}`);
    assert.ok(o.size[0] > 0 && o.colours > 3, `${backend}: drawn image ${JSON.stringify(o)}`);
    assert.match(o.err, /layer index 3 is out of range/, backend);
  }
});

test('drawHeatmap and drawBoxes draw maps and boxes on a canvas from the device', async () => {
  const r = await inPage(async (pg) => {
    const out = {};
    for (const backend of ['webgpu', 'webgl', 'cpu']) {
      await pg.init({ backend, allowSoftware: true });
      const px = (c, x, y) => Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
      const c = document.createElement('canvas');
      // [2, 3] map: 0, 0.5, 1 / -1, 0, 2
      const m = pg.tensor([0, 0.5, 1, -1, 0, 2], [2, 3]);
      await pg.drawHeatmap(m, c, { colormap: 'heat' });
      const heat = { size: [c.width, c.height], zero: px(c, 0, 0), one: px(c, 2, 0), half: px(c, 1, 0), clip: px(c, 2, 1) };
      await pg.drawHeatmap(m, c, { colormap: 'diverging' });
      const div = { neg: px(c, 0, 1), zero: px(c, 1, 1), pos: px(c, 2, 1) };
      await pg.drawHeatmap(m, c, { colormap: 'mask' });
      const mask = { none: px(c, 0, 0), full: px(c, 2, 0) };
      let err = '';
      try {
        await pg.drawHeatmap(pg.tensor([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]), c);
      } catch (e) {
        err = e.message;
      }
      const b = document.createElement('canvas');
      b.width = 40;
      b.height = 40;
      const n = await pg.drawBoxes(b, [[5, 5, 15, 15], [20, 20, 30, 30]], { keep: [1, -1], color: '#00ff00', lineWidth: 2 });
      out[backend] = { heat, div, mask, err, n, edge: px(b, 20, 25), inside: px(b, 25, 25), other: px(b, 5, 10) };
    }
    return out;
  });
  for (const [backend, o] of Object.entries(r)) {
    const { heat, div, mask } = o;
    assert.deepEqual(heat.size, [3, 2], backend);
    assert.deepEqual(heat.zero, [0, 0, 0, 255], `${backend}: 0 is black`);
    assert.deepEqual(heat.one, [255, 255, 255, 255], `${backend}: 1 is white`);
    assert.deepEqual(heat.half, [255, 128, 0, 255], `${backend}: 0.5 is orange`);
    assert.deepEqual(heat.clip, [255, 255, 255, 255], `${backend}: above the range clips`);
    assert.ok(div.neg[2] > 200 && div.neg[0] < 200, `${backend}: negative is blue ${div.neg}`);
    assert.deepEqual(div.zero, [255, 255, 255, 255], `${backend}: 0 is white`);
    assert.ok(div.pos[0] > 200 && div.pos[2] < 60, `${backend}: max is red ${div.pos}`);
    assert.equal(mask.none[3], 0, `${backend}: mask 0 is transparent`);
    assert.deepEqual(mask.full, [255, 0, 0, 255], `${backend}: mask 1 is opaque red`);
    assert.match(o.err, /drawHeatmap: expects a map/, backend);
    assert.equal(o.n, 1);
    assert.equal(o.edge[1], 255, `${backend}: the kept box is drawn ${o.edge}`);
    assert.equal(o.inside[3], 0, `${backend}: boxes are outlines`);
    assert.equal(o.other[3], 0, `${backend}: the dropped box is not drawn`);
  }
});
