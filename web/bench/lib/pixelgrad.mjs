// pixelgrad side: the npm package built by `cargo xtask build-wasm` into web/pkg/, served at
// /pkg/index.js. Training goes through model.fit (host batches uploaded per step, loss read
// back every 50 steps, as its API does).
//
// Same initial weights as TF.js: the package has no public weight setter, only
// save('indexeddb://…') / loadModel, so prepare() (untimed) saves a freshly built model, puts
// the shared weights into that IndexedDB record's safetensors bytes (converted to pixelgrad's
// layouts) and setup() loads it with pg.loadModel. If that fails the package's own seeded
// init is used and the row says so.

import { trainWorkloads, matmulWorkloads, trainingData, initialWeights, toPixelgradKernel, chainScale } from './workloads.mjs';
import * as st from './safetensors.mjs';

/** Steps between loss readbacks; also the batches per epoch, so a whole epoch reads once. */
const READ_EVERY = 50;
let pg = null;
let rt = null;

/**
 * The CPU rows' threads: 'cpu' is one thread (the single-threaded build), 'cpu-mt' all the
 * page's hardware threads (the threaded build; the bench pages are cross-origin isolated).
 */
export function cpuThreads(backend) {
  if (backend === 'cpu') return { real: 'cpu', threads: 1 };
  if (backend === 'cpu-mt') return { real: 'cpu', threads: 'all' };
  return { real: backend, threads: undefined };
}

/** Loads the package and starts `backend` ('webgpu' | 'webgl' | 'cpu'). */
export async function init(backend) {
  try {
    pg = await import('/pkg/index.js');
  } catch (e) {
    throw new Error(`pixelgrad package not loadable from /pkg/index.js (run cargo xtask build-wasm): ${e.message}`);
  }
  const { real, threads } = cpuThreads(backend);
  rt = await pg.init({ backend: real, allowSoftware: true, ...(threads === undefined ? {} : { threads }) });
  if (rt.backend !== real) throw new Error(`pixelgrad started ${rt.backend}, not ${real}`);
  const r = rt.report ?? {};
  const t = real === 'cpu' && r.threads ? `${r.threads.count} thread${r.threads.count === 1 ? '' : 's'} (${r.threads.build} build)` : null;
  return { library: `pixelgrad ${pg.version}`, backend, adapter: [r.adapter, r.format && `storage ${r.format}`, t].filter(Boolean).join(', ') || null };
}

/** Device memory in use: bytes held by live tensors and the backend's pools (`rt.memory()`). */
function memory() {
  if (!rt || typeof rt.memory !== 'function') return null;
  const m = rt.memory();
  return { bytes: m.bytesInUse, raw: m };
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

// --- IndexedDB access to the package's saved-model store (database `pixelgrad`, store `models`).
function idb(mode, f) {
  return new Promise((resolve, reject) => {
    // No version: open whatever version the package created (it upgrades the schema itself).
    const open = indexedDB.open('pixelgrad');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction('models', mode);
      const r = f(tx.objectStore('models'));
      tx.oncomplete = () => (db.close(), resolve(r.result));
      tx.onerror = tx.onabort = () => (db.close(), reject(tx.error));
    };
  });
}

/** `{ index, kind }` from a parameter name such as `3.weight`. */
function paramKey(name) {
  const m = /^(\d+)\.(weight|bias)$/.exec(name);
  return m ? { index: Number(m[1]), kind: m[2] } : null;
}

/**
 * Saves a model of workload `w` under `name` with the shared initial weights. Returns null on
 * success, else why the weights could not be set.
 */
async function storeSharedWeights(w, name) {
  const model = pg.sequential(w.layers.map((l, i) => layer(l, i === 0 ? { inputShape: w.inputShape } : {})));
  model.compile({ optimizer: pg.optimizers.sgd(w.lr), loss: w.loss });
  await model.save(`indexeddb://${name}`);
  model.dispose();
  const rec = await idb('readonly', (s) => s.get(name));
  if (!rec?.bytes) return 'saved record has no bytes';
  const params = st.readHeader(rec.bytes).map((t) => ({ ...t, key: paramKey(t.name) }));
  if (params.some((p) => !p.key)) return `unexpected tensor names ${params.map((p) => p.name).join(', ')}`;
  params.sort((a, b) => a.key.index - b.key.index || (a.key.kind === 'weight' ? -1 : 1));
  const ours = initialWeights(w)
    .filter(Boolean)
    .flatMap((p) => [toPixelgradKernel(p.kernel, p.flattenedFrom), p.bias]);
  if (ours.length !== params.length) return `${params.length} tensors saved, ${ours.length} expected`;
  const tensors = params.map((p, i) => ({ name: p.name, shape: p.shape, data: ours[i].data }));
  for (let i = 0; i < tensors.length; i++) {
    if (ours[i].shape.join('x') !== params[i].shape.join('x')) return `${params[i].name} is ${params[i].shape} here, ${ours[i].shape} in TF.js layout`;
  }
  rec.bytes = st.write(tensors, st.readMetadata(rec.bytes));
  await idb('readwrite', (s) => s.put(rec));
  return null;
}

function trainSession(name, w) {
  let model, d, full, y, sameWeights = null;
  const subsets = new Map(); // k batches → [x, y] tensors for calls shorter than an epoch
  const dbName = `bench-${name}`;
  const yTensor = (from, count) =>
    w.loss === 'meanSquaredError'
      ? pg.tensor(d.onehot.subarray(from * w.classes, (from + count) * w.classes), [count, w.classes])
      : pg.tensor(d.labels.subarray(from, from + count), [count]);
  const subset = (k) => {
    if (!subsets.has(k)) {
      const per = d.x.length / d.n;
      subsets.set(k, [pg.tensor(d.x.subarray(0, k * w.batch * per), [k * w.batch, ...w.inputShape]), yTensor(0, k * w.batch)]);
    }
    return subsets.get(k);
  };
  return {
    async prepare() {
      try {
        const why = await storeSharedWeights(w, dbName);
        sameWeights = why ? `no: ${why}` : 'yes';
      } catch (e) {
        sameWeights = `no: ${e.message}`;
      }
    },
    async setup() {
      if (sameWeights === 'yes') model = await pg.loadModel(`indexeddb://${dbName}`);
      else model = pg.sequential(w.layers.map((l, i) => layer(l, i === 0 ? { inputShape: w.inputShape } : {})));
      model.compile({ optimizer: pg.optimizers.sgd(w.lr), loss: w.loss });
      d = trainingData(w);
      full = pg.tensor(d.x, d.xShape);
      y = yTensor(0, d.n);
    },
    /** Runs whole epochs of READ_EVERY batches, or a prefix of the data for fewer steps. */
    async steps(n) {
      let h;
      if (n < w.batchesPerEpoch) {
        const [xs, ys] = subset(n);
        h = await model.fit(xs, ys, { epochs: 1, batchSize: w.batch, shuffle: false, readEvery: READ_EVERY });
      } else {
        const epochs = Math.round(n / w.batchesPerEpoch);
        h = await model.fit(full, y, { epochs, batchSize: w.batch, shuffle: false, readEvery: READ_EVERY });
        n = epochs * w.batchesPerEpoch;
      }
      const loss = h.history.loss.at(-1);
      if (!Number.isFinite(loss)) throw new Error(`loss is ${loss}`);
      this.lastLoss = loss;
      return n;
    },
    memory: async () => memory(),
    info: () => ({ sameWeights }),
    dispose() {
      for (const [xs, ys] of subsets.values()) (xs.dispose(), ys.dispose());
      full?.dispose();
      y?.dispose();
      model?.dispose();
      pg.removeModel(`indexeddb://${dbName}`).catch(() => {});
    },
  };
}

function unsupported() {
  const no = () => {
    throw new Error('unsupported: the package exposes no matmul (pg.matmul)');
  };
  return { setup: no, steps: no, memory: async () => null, dispose() {} };
}

function matmulSession(n) {
  if (typeof pg.matmul !== 'function') return unsupported();
  let a, b;
  return {
    async setup() {
      const r = (seed) => {
        const v = new Float32Array(n * n);
        let s = seed;
        for (let i = 0; i < v.length; i++) v[i] = ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
        return v;
      };
      a = pg.tensor(r(1), [n, n]);
      b = pg.tensor(r(2).map((v) => v * chainScale(n)), [n, n]);
    },
    async steps(k) {
      // A chain c <- c·b: each product is read by the next, so every one is computed (the
      // GPU backends never compute a product that nothing reads).
      let c = a;
      for (let i = 0; i < k; i++) {
        const next = pg.matmul(c, b);
        if (c !== a) c.dispose();
        c = next;
      }
      await c.data();
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
  if (trainWorkloads[name]) return trainSession(name, trainWorkloads[name]);
  if (matmulWorkloads[name]) return matmulSession(matmulWorkloads[name]);
  throw new Error(`unknown workload ${name}`);
}
