// The inference benchmark's page API (web/bench/inference.mjs calls it through page.evaluate):
// one page per (library, backend), so the libraries never share a GPU context.
//   pixelgrad: the npm package from web/pkg (`pg.loadOnnx`, `model.run`), backends webgpu,
//              webgl, cpu (wasm32, one thread), cpu-mt (all hardware threads)
//   ort:       ONNX Runtime Web from web/bench/node_modules (no CDN), execution providers
//              webgpu, webgl, wasm (one thread), wasm-mt (the wasm EP with all hardware
//              threads), so each CPU row compares equal threads
// Latency is what a caller waits for: inputs in, outputs read back to JS. The runner loads a
// model on both libraries' pages, then alternates short timed chunks between them.

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
        async run(name, x, shape) {
          const t = pg.tensor(x, shape);
          const outs = await m.run({ [name]: t });
          t.dispose();
          const first = Object.keys(outs)[0];
          const data = await outs[first].data();
          for (const o of Object.values(outs)) o.dispose();
          return data;
        },
        dispose: () => m.dispose(),
      };
    },
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
      const s = await ort.InferenceSession.create(new Uint8Array(bytes), { executionProviders: [ep], graphOptimizationLevel: 'all' });
      return {
        // ORT does not report its device memory: the size of the model file it loaded
        report: () => ({ weightBytes: bytes.byteLength, storage: null }),
        async run(name, x, shape) {
          const outs = await s.run({ [name]: new ort.Tensor('float32', x, shape) });
          const first = s.outputNames[0];
          // getData() downloads GPU-resident outputs; CPU outputs are already host arrays.
          const data = outs[first].getData ? await outs[first].getData() : outs[first].data;
          return Float32Array.from(data);
        },
        dispose: () => s.release(),
      };
    },
  };
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
   * Loads `model` ({ file, input, shape, inputFile? }) and runs it once: `loadMs` (fetch
   * excluded) and `firstRunMs` (the first run, shader compiles included).
   */
  async load(model) {
    if (loaded) loaded.m.dispose();
    loaded = null;
    // the fp16 rows: ORT loads onnxruntime's float16 conversion, pixelgrad the float file with { precision: 'f16' }
    const file = side.isOrt && model.ortFile ? model.ortFile : model.file;
    const bytes = await (await fetch(`/bench/models/${file}`)).arrayBuffer();
    const x = model.inputFile ? new Float32Array(await (await fetch(`/bench/models/${model.inputFile}`)).arrayBuffer()) : inputOf(model.shape);
    if (x.length !== model.shape.reduce((a, b) => a * b, 1)) throw new Error(`${model.inputFile}: ${x.length} values for shape ${model.shape}`);
    let t = performance.now();
    const m = await side.load(bytes, side.isOrt ? null : model.precision);
    const loadMs = performance.now() - t;
    loaded = { m, model, x };
    t = performance.now();
    loaded.out = await m.run(model.input, x, model.shape);
    return { loadMs, firstRunMs: performance.now() - t, ...m.report() };
  },
  /**
   * Times runs of the loaded model until `budgetMs` is spent (at least `minRuns`, at most
   * `maxRuns`): the latency of each, ms.
   */
  async time({ budgetMs = 1000, minRuns = 1, maxRuns = 20 }) {
    if (!loaded) throw new Error('load a model first');
    const { m, model, x } = loaded;
    const times = [];
    const start = performance.now();
    while (times.length < maxRuns && (times.length < minRuns || performance.now() - start < budgetMs)) {
      const t = performance.now();
      loaded.out = await m.run(model.input, x, model.shape);
      times.push(performance.now() - t);
    }
    return times;
  },
  /** The first output of the last run, and disposes of the model. */
  async unload() {
    if (!loaded) return null;
    const out = Array.from(loaded.out);
    loaded.m.dispose();
    loaded = null;
    return out;
  },
};
window.pgInferReady = true;
