// pixelgrad side: the npm package built by `cargo xtask build-wasm` into web/pkg/, served at
// /pkg/index.js. Training goes through model.fit with the loss read every 50 steps.

import { trainWorkloads, matmulWorkloads, trainingData } from './workloads.mjs';

const READ_EVERY = 50;
let pg = null;
let rt = null;

/** Loads the package and starts `backend` ('webgpu' | 'webgl' | 'cpu'). */
export async function init(backend) {
  try {
    pg = await import('/pkg/index.js');
  } catch (e) {
    throw new Error(`pixelgrad package not loadable from /pkg/index.js (run cargo xtask build-wasm): ${e.message}`);
  }
  rt = await pg.init({ backend, allowSoftware: true });
  const got = rt?.backend ?? backend;
  if (got !== backend) throw new Error(`pixelgrad started ${got}, not ${backend}`);
  return { library: `pixelgrad ${pg.version ?? ''}`.trim(), backend: got, adapter: rt?.adapter ?? rt?.name ?? null };
}

function memory() {
  const m = typeof rt?.memory === 'function' ? rt.memory() : null;
  return m ? { bytes: m.bytes ?? m.numBytes ?? null, raw: m } : null;
}

function layer(l, first) {
  const act = l.activation && l.activation !== 'linear' ? { activation: l.activation } : {};
  if (l.type === 'dense') return pg.layers.dense({ units: l.units, ...act, ...first });
  if (l.type === 'conv2d')
    return pg.layers.conv2d({ filters: l.filters, kernelSize: l.kernelSize, strides: 1, padding: 'valid', ...act, ...first });
  if (l.type === 'maxPooling2d') return pg.layers.maxPooling2d({ poolSize: l.poolSize, ...first });
  if (l.type === 'flatten') return pg.layers.flatten(first);
  throw new Error(`unknown layer ${l.type}`);
}

function trainSession(w) {
  let model, x, y;
  return {
    async setup() {
      model = pg.sequential(w.layers.map((l, i) => layer(l, i === 0 ? { inputShape: w.inputShape } : {})));
      model.compile({ optimizer: pg.optimizers.sgd(w.lr), loss: w.loss });
      const d = trainingData(w);
      x = pg.tensor(d.x, d.xShape);
      y = w.loss === 'meanSquaredError' ? pg.tensor(d.onehot, [d.n, w.classes]) : pg.tensor(d.labels, [d.n]);
    },
    async steps(n) {
      const epochs = Math.max(1, Math.round(n / w.batchesPerEpoch));
      // A one-step call trains on the first batch only (first-step latency).
      if (n === 1) {
        await model.fit(x, y, { epochs: 1, batchSize: w.batch, shuffle: false, readEvery: READ_EVERY, steps: 1 });
        return 1;
      }
      await model.fit(x, y, { epochs, batchSize: w.batch, shuffle: false, readEvery: READ_EVERY });
      return epochs * w.batchesPerEpoch;
    },
    memory: async () => memory(),
    dispose() {
      for (const o of [x, y, model]) o?.dispose?.();
    },
  };
}

function matmulSession(n) {
  let a, b;
  return {
    async setup() {
      if (typeof pg.matmul !== 'function') throw new Error('the package exposes no matmul');
      const r = (seed) => {
        const v = new Float32Array(n * n);
        let s = seed;
        for (let i = 0; i < v.length; i++) v[i] = ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
        return v;
      };
      a = pg.tensor(r(1), [n, n]);
      b = pg.tensor(r(2), [n, n]);
    },
    async steps(k) {
      let c = null;
      for (let i = 0; i < k; i++) {
        const next = pg.matmul(a, b);
        c?.dispose?.();
        c = next;
      }
      await c.data();
      c.dispose?.();
      return k;
    },
    memory: async () => memory(),
    dispose() {
      a?.dispose?.();
      b?.dispose?.();
    },
  };
}

/** The session for a workload name (see workloads.mjs). */
export function session(name) {
  if (trainWorkloads[name]) return trainSession(trainWorkloads[name]);
  if (matmulWorkloads[name]) return matmulSession(matmulWorkloads[name]);
  throw new Error(`unknown workload ${name}`);
}
