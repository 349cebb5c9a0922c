// The inference benchmark's page API (web/bench/inference.mjs calls it through page.evaluate):
// one page per (library, backend), so the libraries never share a GPU context.
//   pixelgrad: the npm package from web/pkg (`pg.loadOnnx`, `model.run`), backends webgpu,
//              webgl, cpu (wasm32, one thread), cpu-mt (all hardware threads)
//   ort:       ONNX Runtime Web from web/bench/node_modules (no CDN), execution providers
//              webgpu, webgl, wasm (one thread), wasm-mt (the wasm EP with all hardware
//              threads), so each CPU row compares equal threads
// Latency is what a caller waits for: inputs in, outputs read back to JS. The runner loads a
// model on both libraries' pages, then alternates short timed chunks between them. A decoder
// entry (`generate`) times one whole greedy generation with the cache instead, the loop written
// here once for both libraries (`generate` below), so its rows give tokens/s.

const ORT_DIST = '/bench/node_modules/onnxruntime-web/dist/';
let side = null;

/** The deterministic batch-1 input of `shape`: values in [0, 1), the same in both libraries. */
export function inputOf(shape) {
  const n = shape.reduce((a, b) => a * b, 1);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const v = Math.sin(i * 12.9898) * 43758.5453;
    x[i] = v - Math.floor(v);
  }
  return x;
}

async function pixelgrad(backend) {
  const pg = await import('/pkg/index.js');
  // 'cpu': one thread (the single-threaded build); 'cpu-mt': all hardware threads
  const real = backend === 'cpu-mt' ? 'cpu' : backend;
  const threads = backend === 'cpu' ? { threads: 1 } : backend === 'cpu-mt' ? { threads: 'all' } : {};
  const rt = await pg.init({ backend: real, allowSoftware: true, ...threads });
  if (rt.backend !== real) throw new Error(`pixelgrad started ${rt.backend}, not ${real}`);
  const t = rt.report?.threads;
  return {
    library: `pixelgrad ${pg.version}`,
    adapter: real === 'cpu' && t ? `${t.count} thread${t.count === 1 ? '' : 's'} (${t.build} build)` : (rt.report?.adapter ?? null),
    async load(bytes, precision) {
      const m = await pg.loadOnnx(new Uint8Array(bytes), precision ? { precision } : {});
      return {
        // constants upload on first use: ask after a run
        report() {
          const info = m.info ?? {};
          return { weightBytes: info.deviceWeightBytes ?? null, storage: [info.precision, info.weightStorage, info.path].filter(Boolean).join('; ') || null };
        },
        // feeds: name -> a tensor of this side; outputs: name -> a tensor, left on the device
        run: (feeds) => m.run(feeds),
        dispose: () => m.dispose(),
      };
    },
    // integer inputs (int64 in the model) are int32 tensors; a bool is an int32 0 or 1
    tensor: ({ data, shape, dtype }) => pg.tensor(dtype === 'float32' ? data : Int32Array.from(data), shape),
    read: async (t) => t.data(),
    free: (t) => t.dispose(),
  };
}

async function ortSide(backend) {
  const ort = await import(`${ORT_DIST}ort.all.min.mjs`);
  ort.env.wasm.wasmPaths = ORT_DIST;
  // 'wasm': one thread (as pixelgrad's 'cpu'); 'wasm-mt': all hardware threads (as 'cpu-mt')
  ort.env.wasm.numThreads = backend === 'wasm-mt' ? navigator.hardwareConcurrency : 1;
  ort.env.logLevel = 'error';
  const ep = backend === 'wasm-mt' ? 'wasm' : backend;
  return {
    library: `onnxruntime-web ${ort.env.versions?.web ?? ''}`.trim(),
    adapter: ep === 'wasm' ? `${ort.env.wasm.numThreads} thread${ort.env.wasm.numThreads === 1 ? '' : 's'}` : null,
    async load(bytes) {
      const outputs = (s) => s.outputNames;
      // On WebGPU the cache a decoder hands back (present.*) stays in GPU buffers for the next
      // step, as transformers.js keeps it; the other outputs come back to the CPU.
      const session = async (where) =>
        ort.InferenceSession.create(new Uint8Array(bytes), { executionProviders: [ep], graphOptimizationLevel: 'all', ...(where ? { preferredOutputLocation: where } : {}) });
      let s = await session(null);
      if (ep === 'webgpu' && outputs(s).some((n) => n.startsWith('present.'))) {
        const where = Object.fromEntries(outputs(s).map((n) => [n, n.startsWith('present.') ? 'gpu-buffer' : 'cpu']));
        await s.release();
        s = await session(where);
      }
      return {
        // ORT does not report its device memory: the size of the model file it loaded
        report: () => ({ weightBytes: bytes.byteLength, storage: null }),
        run: (feeds) => s.run(feeds),
        dispose: () => s.release(),
      };
    },
    tensor: ({ data, shape, dtype }) =>
      dtype === 'float32' ? new ort.Tensor('float32', data, shape)
        : dtype === 'bool' ? new ort.Tensor('bool', Uint8Array.from(data), shape)
          : new ort.Tensor('int64', BigInt64Array.from(data, (v) => BigInt(v)), shape),
    // getData() downloads GPU-resident outputs; CPU outputs are already host arrays.
    read: async (t) => Float32Array.from(t.location === 'gpu-buffer' ? await t.getData() : t.data),
    free: (t) => {
      if (t.location === 'gpu-buffer') t.dispose();
    },
  };
}

const sum = (xs) => xs.reduce((a, b) => a * b, 1);

/** The feeds of a latency model: its inputs ({ name, shape, dtype, file? }), or one float input. */
async function modelInputs(model) {
  const list = model.inputs ?? [{ name: model.input, shape: model.shape, dtype: 'float32', file: model.inputFile }];
  const out = [];
  for (const i of list) {
    let data;
    if (i.file) {
      const buf = await (await fetch(`/bench/models/${i.file}`)).arrayBuffer();
      data = i.dtype === 'float32' ? new Float32Array(buf) : new Int32Array(buf);
    } else data = inputOf(i.shape);
    if (data.length !== sum(i.shape)) throw new Error(`${i.file}: ${data.length} values for shape ${i.shape}`);
    out.push({ ...i, data });
  }
  return out;
}

const argmaxLast = (logits, vocab) => {
  let best = logits.length - vocab;
  for (let k = best + 1; k < logits.length; k++) if (logits[k] > logits[best]) best = k;
  return best - (logits.length - vocab);
};

/**
 * One greedy generation with the cache, the same loop on both sides: the prompt through the
 * prompt decoder (or the merged decoder's no-cache branch), then `newTokens` steps of one token
 * each, every step's present.N.key/value fed back as the next past_key_values.N.key/value
 * without reading them (they stay where the library left them). The logits of each step are
 * read (the next token is their argmax). Returns the tokens and the last step's logits.
 */
async function generate(side, step, prefill, g, prompt) {
  const cache = [];
  for (let l = 0; l < g.layers; l++) cache.push(`${l}.key`, `${l}.value`);
  const own = [];
  const t = (data, shape, dtype) => {
    const x = side.tensor({ data, shape, dtype });
    own.push(x);
    return x;
  };
  const feeds = { input_ids: t(prompt, [1, prompt.length], 'int64') };
  if (g.merged) {
    // Optimum's merged decoder reads a past on its no-cache branch too, and ignores it: one zero position
    for (const c of cache) feeds[`past_key_values.${c}`] = t(new Float32Array(g.heads * g.headSize), [1, g.heads, 1, g.headSize], 'float32');
    feeds.use_cache_branch = t([0], [1], 'bool');
  }
  let outs = await prefill.run(feeds);
  const tokens = [];
  let logits = null;
  for (let s = 0; ; s++) {
    logits = await side.read(outs.logits);
    const vocab = logits.length / (s === 0 ? prompt.length : 1);
    if (s === g.newTokens) break;
    const tok = argmaxLast(logits, vocab);
    tokens.push(tok);
    own.splice(0).forEach((x) => side.free(x));
    const next = { input_ids: t([tok], [1, 1], 'int64') };
    for (const c of cache) next[`past_key_values.${c}`] = outs[`present.${c}`];
    if (g.merged) next.use_cache_branch = t([1], [1], 'bool');
    const before = outs;
    outs = await step.run(next);
    for (const x of Object.values(before)) side.free(x);
  }
  for (const x of [...Object.values(outs), ...own]) side.free(x);
  return { tokens, logits };
}

let loaded = null;

window.pgInfer = {
  /** Starts `lib` ('pixelgrad' | 'ort') on `backend`; returns { library, backend, adapter }. */
  async init(lib, backend) {
    if (lib === 'pixelgrad') side = await pixelgrad(backend);
    else if (lib === 'ort') side = { ...(await ortSide(backend)), isOrt: true };
    else throw new Error(`unknown library ${lib}`);
    return { library: side.library, backend, adapter: side.adapter };
  },
  /**
   * Loads `model` ({ file, input, shape, inputFile? } or { file, inputs: [{ name, shape, dtype,
   * file }] }, or a decoder with `generate`: see below) and runs it once: `loadMs` (fetch
   * excluded) and `firstRunMs` (the first run, shader compiles included).
   */
  async load(model) {
    if (loaded) await loaded.dispose();
    loaded = null;
    // the fp16 rows: ORT loads onnxruntime's float16 conversion, pixelgrad the float file with { precision: 'f16' }
    const get = async (f) => (await fetch(`/bench/models/${f}`)).arrayBuffer();
    const file = side.isOrt && model.ortFile ? model.ortFile : model.file;
    const bytes = await get(file);
    const prefillBytes = model.prefillFile ? await get(model.prefillFile) : null;
    const inputs = model.generate ? null : await modelInputs(model);
    const prompt = model.generate ? new Int32Array(await get(model.generate.prompt)) : null;
    let t = performance.now();
    const m = await side.load(bytes, side.isOrt ? null : model.precision);
    const prefill = prefillBytes ? await side.load(prefillBytes, side.isOrt ? null : model.precision) : m;
    const loadMs = performance.now() - t;
    // One run: a latency model's inputs in, its first output (or `output`) read back; a decoder
    // (`generate`): one whole greedy generation, the prompt and `newTokens` steps with the cache.
    const once = model.generate
      ? async () => {
        const r = await generate(side, m, prefill, model.generate, prompt);
        loaded.tokens = r.tokens;
        return r.logits;
      }
      : async () => {
        const feeds = Object.fromEntries(inputs.map((i) => [i.name, side.tensor(i)]));
        const outs = await m.run(feeds);
        for (const x of Object.values(feeds)) side.free(x);
        const data = await side.read(outs[model.output ?? Object.keys(outs)[0]]);
        for (const o of Object.values(outs)) side.free(o);
        return data;
      };
    loaded = {
      once,
      dispose: async () => {
        await m.dispose();
        if (prefill !== m) await prefill.dispose();
      },
    };
    t = performance.now();
    loaded.out = await once();
    const firstRunMs = performance.now() - t;
    return { loadMs, firstRunMs, ...m.report(), ...(loaded.tokens ? { tokens: loaded.tokens } : {}) };
  },
  /**
   * Times runs of the loaded model until `budgetMs` is spent (at least `minRuns`, at most
   * `maxRuns`): the latency of each, ms.
   */
  async time({ budgetMs = 1000, minRuns = 1, maxRuns = 20 }) {
    if (!loaded) throw new Error('load a model first');
    const times = [];
    const start = performance.now();
    while (times.length < maxRuns && (times.length < minRuns || performance.now() - start < budgetMs)) {
      const t = performance.now();
      loaded.out = await loaded.once();
      times.push(performance.now() - t);
    }
    return times;
  },
  /** The first output of the last run (a decoder: its last logits, and the tokens), and disposes of the model. */
  async unload() {
    if (!loaded) return null;
    const out = Array.from(loaded.out);
    const tokens = loaded.tokens;
    await loaded.dispose();
    loaded = null;
    return tokens ? { output: out, tokens } : out;
  },
};
window.pgInferReady = true;
