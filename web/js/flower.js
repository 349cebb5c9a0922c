// `pg.flower`: the page (or a worker) as a node of a Flower federation.
//
//   const d = pg.flower.partition(pg.data.digits(), { index: 0, count: 4, alpha: 0.5 });
//   const summary = await pg.flower.join({
//     server: location.origin,          // a page server forwarding /v1/fleet/* to the SuperLink
//     model, data: d,                   // a compiled pg.sequential and { train, test } shards
//     onRound: (r) => console.log(r.round, r.accuracy),
//   });
//
// The node itself (Fleet protocol, Flower's object format, DP) is Rust compiled to wasm; it
// talks to the server with `fetch` only. The local data never leaves the page: requests carry
// the node's signed identity and model parameters.
//
// A SuperLink with node authentication on (`flower-superlink --enable-supernode-auth`) only
// accepts nodes whose public key its operator registered: `pg.flower.nodeKey()` keeps a
// non-extractable P-256 key in this origin's IndexedDB (made on first use), gives its public
// key as the OpenSSH line `flwr supernode register` takes, and signs in WebCrypto; pass it as
// `join({ nodeKey })`.
import { currentRuntime, wasm } from './runtime.js';
import { release } from './instance.js';

const KEY_DB = 'pixelgrad-flower';
const KEY_STORE = 'node-keys';

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function openKeys() {
  if (typeof indexedDB === 'undefined') throw new Error('flower.nodeKey: this context has no IndexedDB to keep the key in');
  const open = indexedDB.open(KEY_DB, 1);
  open.onupgradeneeded = () => open.result.createObjectStore(KEY_STORE);
  return request(open);
}

async function storedPair(db, name) {
  return request(db.transaction(KEY_STORE, 'readonly').objectStore(KEY_STORE).get(name));
}

/**
 * The page's persistent node key `name` (default 'default'): a P-256 ECDSA key pair made with
 * WebCrypto as non-extractable (the secret can sign but never be read, not even by this page)
 * and kept in IndexedDB, made on first use (`create: false` returns null instead). Resolves to
 * `{ name, publicKey (SPKI bytes), openssh, fingerprint, sign(bytes) }`; register `openssh`
 * (saved as a `.pub` file) with `flwr supernode register KEY.pub` and pass the object to
 * `join({ nodeKey })`.
 */
async function nodeKey({ name = 'default', create = true } = {}) {
  if (!wasm || !wasm.flowerPublicKeyInfo) throw new Error('flower.nodeKey: call `await pg.init()` first');
  if (typeof name !== 'string' || !name) throw new Error('flower.nodeKey: name must be a non-empty string');
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  if (!subtle) throw new Error('flower.nodeKey: WebCrypto is only available on https:// pages and localhost');
  const db = await openKeys();
  try {
    let pair = await storedPair(db, name);
    if (!pair) {
      if (!create) return null;
      const made = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
      try {
        // `add` fails if another tab stored a key under this name meanwhile: theirs wins
        await request(db.transaction(KEY_STORE, 'readwrite').objectStore(KEY_STORE).add(made, name));
      } catch (e) {
        if (!e || e.name !== 'ConstraintError') throw e;
      }
      pair = await storedPair(db, name);
    }
    const publicKey = new Uint8Array(await subtle.exportKey('spki', pair.publicKey));
    const { openssh, fingerprint } = wasm.flowerPublicKeyInfo(publicKey);
    const sign = (bytes) => subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, pair.privateKey, bytes);
    return Object.freeze({ name, publicKey, openssh, fingerprint, sign });
  } finally {
    db.close();
  }
}

/** Deletes the stored node key `name`; resolves to whether there was one. */
async function forgetNodeKey({ name = 'default' } = {}) {
  const db = await openKeys();
  try {
    const had = (await storedPair(db, name)) !== undefined;
    await request(db.transaction(KEY_STORE, 'readwrite').objectStore(KEY_STORE).delete(name));
    return had;
  } finally {
    db.close();
  }
}

function u32Labels(y, what) {
  if (y instanceof Int32Array || y instanceof Uint32Array || y instanceof Uint8Array || Array.isArray(y)) return Uint32Array.from(y);
  throw new Error(`${what}: labels must be an Int32Array, Uint32Array, Uint8Array or array of class indices`);
}

function pick(split, idx, per) {
  const x = new Float32Array(idx.length * per);
  const y = new Int32Array(idx.length);
  idx.forEach((i, k) => {
    x.set(split.x.subarray(i * per, (i + 1) * per), k * per);
    y[k] = split.y[i];
  });
  return { x, y, n: idx.length };
}

function splitOf(s, what) {
  if (!s || !(s.x instanceof Float32Array) || !s.y || !(s.y.length > 0)) {
    throw new Error(`${what} must be { x: Float32Array, y: Int32Array, n } with at least one sample`);
  }
  if (s.x.length % s.y.length !== 0) throw new Error(`${what}: ${s.x.length} values do not divide into ${s.y.length} samples`);
  return s;
}

/**
 * This node's shards of a data set `{ train, test }` (as `pg.data.digits()` or two
 * `pg.data.parseMnist` results give them): training samples cut into `count` non-IID shards by a
 * Dirichlet(`alpha`) draw per class (IID without `alpha`), test samples into `count` IID parts;
 * the same partitions as `pixelgrad federated --partition index/count --alpha alpha --seed seed`.
 * @param {{ index?: number, count?: number, alpha?: number, seed?: number }} [options]
 */
function partition(data, options = {}) {
  const { index, count, alpha, seed = 42 } = options;
  if (!wasm || !wasm.flowerPartition) throw new Error('flower.partition: call `await pg.init()` first');
  const train = splitOf(data && data.train, 'flower.partition: data.train');
  const test = splitOf(data && data.test, 'flower.partition: data.test');
  if (!Number.isInteger(index) || !Number.isInteger(count) || index < 0 || index >= count) {
    throw new Error(`flower.partition: index must be in 0..count-1 (got index ${index}, count ${count})`);
  }
  const per = train.x.length / train.y.length;
  const a = alpha === undefined || alpha === null ? 0 : Number(alpha);
  if (!(a >= 0) || !Number.isFinite(a)) throw new Error(`flower.partition: alpha must be a positive number, got ${alpha}`);
  const ti = wasm.flowerPartition(u32Labels(train.y, 'flower.partition'), index, count, a, seed >>> 0);
  const vi = wasm.flowerPartition(u32Labels(test.y, 'flower.partition'), index, count, 0, seed >>> 0);
  return { ...data, train: pick(train, ti, per), test: pick(test, vi, per), partition: { index, count, alpha: a || null, seed } };
}

/**
 * Joins the federation at `server` (the origin of a page server that forwards `/v1/fleet/*` to
 * a Flower SuperLink) and trains `model` on `data.train`, evaluating the global model on
 * `data.test` each round. Resolves when the run finishes to `{ nodeId, runId, rounds,
 * evaluations, bytesUp, bytesDown }`; rejects with an Error (unreachable server, protocol
 * mismatch, parameters whose shapes do not fit the model — the model is then left as it was).
 *
 * Options: `onRound({ round, accuracy, loss, examples, train })` after each evaluation of the
 * global model, `onEvent(e)` for every step (`connected`, `received`, `trained`, `evaluated`,
 * `replied`, `failed`, `finished`), `signal` (an AbortSignal that stops the node), `epochs`,
 * `batchSize`, `lr` (used when the server's config does not set them), `localDp: { epsilon,
 * delta, clippingNorm, sensitivity }` (Flower's LocalDpMod, on the device), `syncWeights`
 * (default true: the model takes each round's global parameters), `nodeKey` (from
 * `pg.flower.nodeKey()`; default a fresh key per join), `timeout` (seconds a request may take,
 * default 120), `maxEpochs` / `maxRounds` (the most local epochs per round and rounds the
 * server may ask for, default 100 and 10000: more is refused), `secagg` (true: updates go out
 * only through Flower's SecAgg+, the server's `SecAggPlusWorkflow`), `distributedDp: {
 * noiseMultiplier, clippingNorm, delta }` (with `secagg`: this node's share of the noise),
 * `maxEpsilon` (the node's own privacy budget at its DP mode's delta: a round that would go
 * past it is refused, kind 'privacyBudget' in the failed event; the server cannot raise it),
 * `shareMetrics` ('minimal', the default: counts rounded, no train metrics, evaluation of the
 * server's weights kept local; or 'all'). `trained` events carry `secagg`, `epsilon` and
 * `delta` (cumulative, null without DP); `onRound`'s `train` is that event.
 *
 * The node refuses what a server could use against the page before doing it: object IDs that
 * are not SHA-256 hex, messages larger than the model's own parameters (every reference
 * counted), answers over 6 MiB or slower than `timeout`. The rejection is a PixelgradError whose
 * `kind` says why: 'unreachable', 'timeout', 'tls', 'notRegistered', 'http', 'protocol',
 * 'limit', 'mismatch', 'invalid', 'cancelled' (stopped), or an engine error's own kind.
 */
async function join(opts = {}) {
  const { server, model, data } = opts;
  const rt = currentRuntime('flower.join');
  if (typeof server !== 'string' || !/^https?:\/\//.test(server)) throw new Error('flower.join: server must be an http(s) origin, e.g. location.origin');
  if (!model || typeof model._net !== 'function') throw new Error('flower.join: model must be a pg.sequential model');
  if (!model._compile) throw new Error('flower.join: the model is not compiled; call model.compile({ optimizer, loss }) first');
  if (model._fitting) throw new Error('flower.join: this model is training; wait for fit to finish');
  const net = model._net('flower.join');
  const train = splitOf(data && data.train, 'flower.join: data.train');
  const test = splitOf(data && data.test, 'flower.join: data.test');
  const sample = Array.from(net.inputShape);
  const per = sample.reduce((a, b) => a * b, 1);
  if (train.x.length !== per * train.y.length || test.x.length !== per * test.y.length) {
    throw new Error(`flower.join: the model takes samples of shape [${sample.join(', ')}] (${per} values); the data's samples have ${train.x.length / train.y.length}`);
  }
  const opt = model._compile.optimizer;
  const options = {
    server: server.replace(/\/+$/, ''),
    epochs: opts.epochs,
    batchSize: opts.batchSize,
    lr: opts.lr !== undefined ? opts.lr : opt.learningRate,
    momentum: opt.momentum || 0,
    seed: opts.seed,
    readEvery: opts.readEvery,
    pollMax: opts.pollMax,
    heartbeatPeriod: opts.heartbeatPeriod,
    syncWeights: opts.syncWeights !== false,
    localDp: opts.localDp || null,
    timeout: opts.timeout,
    maxEpochs: opts.maxEpochs,
    maxRounds: opts.maxRounds,
    secagg: opts.secagg === undefined ? null : opts.secagg,
    distributedDp: opts.distributedDp || null,
    maxEpsilon: opts.maxEpsilon === undefined ? null : opts.maxEpsilon,
    shareMetrics: opts.shareMetrics === undefined ? null : opts.shareMetrics,
  };
  const key = opts.nodeKey || null;
  if (key && !(key.publicKey instanceof Uint8Array && typeof key.sign === 'function')) {
    throw new Error('flower.join: nodeKey must come from pg.flower.nodeKey()');
  }
  const f32 = (y) => Float32Array.from(y);
  let lastTrained = null;
  const onEvent = (e) => {
    if (e.type === 'trained') lastTrained = e;
    if (e.type === 'evaluated') {
      if (e.weights && options.syncWeights) net.loadBytes(e.weights);
      if (opts.onRound) opts.onRound({ round: e.round, accuracy: e.accuracy, loss: e.loss, examples: e.examples, train: lastTrained });
    }
    if (opts.onEvent) opts.onEvent(e);
  };
  model._fitting = true;
  let node;
  try {
    node = wasm.flowerJoin(
      rt._inner,
      JSON.stringify(model._config()),
      opt.name,
      model._compile.loss,
      train.x,
      f32(train.y),
      test.x,
      f32(test.y),
      Uint32Array.from(sample),
      JSON.stringify(options),
      onEvent,
      key,
    );
  } catch (e) {
    model._fitting = false;
    throw e;
  }
  const abort = () => node.stop();
  if (opts.signal) opts.signal.addEventListener('abort', abort, { once: true });
  try {
    return await node.promise;
  } finally {
    model._fitting = false;
    if (opts.signal) opts.signal.removeEventListener('abort', abort);
    release(node);
  }
}

export const flower = Object.freeze({ join, partition, nodeKey, forgetNodeKey });
