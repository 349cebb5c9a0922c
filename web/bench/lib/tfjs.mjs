// TF.js 4.22.0 side: the UMD bundles are loaded from web/bench/node_modules (served by the
// harness, no CDN) and put `tf` on window. Training is TF.js's fastest idiomatic loop,
// `optimizer.minimize` on pre-sliced device-resident batches with the loss read back every
// 50 steps (as pixelgrad's fit with readEvery: 50), so the baseline is not slowed by
// model.fit's per-batch callbacks.

import { trainWorkloads, matmulWorkloads, initialWeights, trainingData, chainScale } from './workloads.mjs';

const base = '/bench/node_modules/@tensorflow';
const scripts = [
  `${base}/tfjs/dist/tf.min.js`,
  `${base}/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js`,
  `${base}/tfjs-backend-wasm/dist/tf-backend-wasm.min.js`,
];
/** How often the loss is read back while training (matches pixelgrad's readEvery). */
const READ_EVERY = 50;

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.appendChild(s);
  });
}

let tf = null;

/** Loads TF.js and switches to `backend` ('webgpu' | 'webgl' | 'wasm' | 'webgpu-packed'). */
export async function init(backend) {
  if (!tf) {
    // The bundles' regenerator runtime assigns the global `regeneratorRuntime`; where that
    // assignment throws (strict mode) it falls back to `Function(...)`, which the pages' CSP
    // refuses (no 'unsafe-eval'). With the global declared first, the assignment succeeds.
    if (!('regeneratorRuntime' in window)) window.regeneratorRuntime = undefined;
    for (const s of scripts) await loadScript(s);
    tf = window.tf;
    tf.wasm.setWasmPaths(`${base}/tfjs-backend-wasm/dist/`);
  }
  // 'wasm': the plain SIMD build, one thread (as pixelgrad's 'cpu' row). 'wasm-mt': the
  // threaded build with all hardware threads (as 'cpu-mt'); its workers load their script with
  // importScripts of a blob: URL, which only the bench server's CSP allows (run.mjs). The
  // choice is made once per page: each row has a page of its own.
  if (backend === 'wasm' || backend === 'wasm-mt') {
    const mt = backend === 'wasm-mt';
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', mt);
    tf.wasm.setThreadsCount(mt ? navigator.hardwareConcurrency : 1);
  }
  // 'webgpu-packed': WebGPU with the packed matmul program forced. TF.js's default picks a
  // reduce (workgroup-barrier) program for small outputs, which is ~30x slower on SwiftShader;
  // this variant is a tuned reference, not what a user gets by default.
  const real = backend === 'webgpu-packed' ? 'webgpu' : backend === 'wasm-mt' ? 'wasm' : backend;
  const ok = await tf.setBackend(real);
  if (!ok || tf.getBackend() !== real) throw new Error(`TF.js backend ${real} did not start`);
  await tf.ready();
  if (backend === 'webgpu-packed') tf.env().set('WEBGPU_MATMUL_PROGRAM_TYPE', 3);
  let adapter = null;
  if (real === 'webgpu') {
    const info = tf.backend().adapterInfo;
    adapter = info ? [info.vendor, info.architecture].filter(Boolean).join(' ') || null : null;
  } else if (backend === 'webgl') {
    const gl = tf.backend().gpgpu?.gl;
    const ext = gl?.getExtension('WEBGL_debug_renderer_info');
    adapter = gl ? gl.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : gl.RENDERER) : null;
  } else if (real === 'wasm') {
    adapter = `wasm (simd: ${await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')}, threaded build: ${await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT')}, XNNPACK threads: ${tf.wasm.getThreadsCount()})`;
  }
  return { library: `TF.js ${tf.version.tfjs}`, backend, adapter };
}

function memory() {
  const m = tf.memory();
  // webgl/webgpu report device bytes separately; wasm's numBytes is its heap-resident data.
  const bytes = m.numBytesInGPU ?? m.numBytes;
  return { bytes, tensors: m.numTensors, raw: { ...m, reasons: undefined } };
}

function buildModel(w) {
  const model = tf.sequential();
  w.layers.forEach((l, i) => {
    const first = i === 0 ? { inputShape: w.inputShape } : {};
    if (l.type === 'dense') model.add(tf.layers.dense({ units: l.units, activation: l.activation, ...first }));
    else if (l.type === 'conv2d')
      model.add(tf.layers.conv2d({ filters: l.filters, kernelSize: l.kernelSize, strides: 1, padding: 'valid', activation: l.activation, ...first }));
    else if (l.type === 'maxPooling2d') model.add(tf.layers.maxPooling2d({ poolSize: l.poolSize, ...first }));
    else if (l.type === 'flatten') model.add(tf.layers.flatten(first));
  });
  const weights = initialWeights(w).flatMap((p) => (p ? [tf.tensor(p.kernel.data, p.kernel.shape), tf.tensor(p.bias.data, p.bias.shape)] : []));
  model.setWeights(weights);
  weights.forEach((t) => t.dispose());
  return model;
}

function trainSession(w) {
  let model, opt, batches, last = null, step = 0;
  const lossFn =
    w.loss === 'meanSquaredError'
      ? (y, p) => tf.losses.meanSquaredError(y, p)
      : (y, p) => tf.losses.softmaxCrossEntropy(y, p);
  return {
    async setup() {
      model = buildModel(w);
      opt = tf.train.sgd(w.lr);
      const d = trainingData(w);
      const x = tf.tensor(d.x, d.xShape);
      const y = tf.tensor(d.onehot, [d.n, w.classes]);
      batches = [];
      for (let b = 0; b < w.batchesPerEpoch; b++) {
        batches.push({ x: x.slice(b * w.batch, w.batch), y: y.slice(b * w.batch, w.batch) });
      }
      x.dispose();
      y.dispose();
    },
    async steps(n) {
      for (let i = 0; i < n; i++) {
        const b = batches[step % batches.length];
        step++;
        let cost;
        try {
          cost = opt.minimize(() => lossFn(b.y, model.apply(b.x, { training: true })), true);
        } catch (e) {
          const k = /Kernel '(\w+)' not registered for backend '(\w+)'/.exec(e.message);
          if (k) throw new Error(`unsupported: TF.js ${k[2]} has no ${k[1]} kernel, so it cannot train this model`);
          throw e;
        }
        if (last) last.dispose();
        last = cost;
        if (step % READ_EVERY === 0) await last.data();
      }
      const v = (await last.data())[0];
      if (!Number.isFinite(v)) throw new Error(`loss is ${v}`);
      this.lastLoss = v;
      return n;
    },
    memory: async () => memory(),
    info: () => ({ sameWeights: 'yes' }),
    dispose() {
      last?.dispose();
      batches?.forEach((b) => (b.x.dispose(), b.y.dispose()));
      model?.dispose();
      opt?.dispose();
    },
  };
}

function matmulSession(n) {
  let a, b;
  return {
    async setup() {
      a = tf.randomUniform([n, n], -1, 1, 'float32', 1);
      b = tf.randomUniform([n, n], -chainScale(n), chainScale(n), 'float32', 2);
    },
    async steps(k) {
      // The same chain c <- c·b as on pixelgrad's side.
      let c = a;
      for (let i = 0; i < k; i++) {
        const next = tf.matMul(c, b);
        if (c !== a) c.dispose();
        c = next;
      }
      // One tiny readback at the end: waits for every queued multiply.
      const corner = c.slice([0, 0], [1, 1]);
      await corner.data();
      corner.dispose();
      if (c !== a) c.dispose();
      return k;
    },
    memory: async () => memory(),
    dispose() {
      a?.dispose();
      b?.dispose();
    },
  };
}

/** The session for a workload name (see workloads.mjs). */
export function session(name) {
  if (trainWorkloads[name]) return trainSession(trainWorkloads[name]);
  if (matmulWorkloads[name]) return matmulSession(matmulWorkloads[name]);
  throw new Error(`unknown workload ${name}`);
}
