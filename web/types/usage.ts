// Typed usage of the `pixelgrad` package: every public declaration of index.d.ts used as an
// application would use it. Never run; `tsc` checks it (strict) against the declarations, in
// the source tree (types/tsconfig.json) and against the packed package installed from its
// tarball (web/tests/package.test.mjs), where 'pixelgrad' resolves through the `exports`
// map's `types` condition. The same test checks that every exported name and every class
// member of index.d.ts appears here, so a new declaration needs a line here too.
import * as pg from 'pixelgrad';

export async function usage(canvas: HTMLCanvasElement, video: HTMLVideoElement): Promise<void> {
  const version: string = pg.version;
  const bytes = new Uint8Array(0);
  const loaded: unknown = await pg.loadWasm({ wasmUrl: bytes });
  void [version, loaded];

  // Runtime
  const backend: pg.BackendName = 'cpu';
  const options: pg.InitOptions = { backend, allowSoftware: true, wasmUrl: '/pixelgrad_web_bg.wasm', precision: 'default', limits: { maxElements: 1 << 20, maxOpWork: 1 << 30 } };
  const rt: pg.Runtime = await pg.init(options);
  const same: pg.Runtime | null = pg.runtime();
  const report: pg.RuntimeReport = rt.report;
  const tries: pg.BackendTry[] = report.tried;
  const firstTry: boolean = tries.length > 0 && tries[0].ok && tries[0].reason.length > 0 && tries[0].backend === rt.backend;
  const describe = [report.adapter, report.name, report.format, report.software, report.warnings, report.selfTest.maxRelError, report.recoveries?.[0]?.crash, report.precisionCheck?.deviceDrop];
  const measuring: pg.InitOptions = { backend: 'auto', measure: { layers: [pg.layers.dense({ units: 10, inputShape: [64] })], batchSize: 32, loss: 'softmaxCrossEntropy' } };
  const timing: pg.BackendTiming | undefined = report.measured?.timings[0];
  const measured = [measuring, report.measured?.backend, report.measured?.cached, timing?.warmMs, timing?.stepMs, timing?.steps, report.videoInput?.path, report.videoInput?.reason, report.videoInput?.probe];
  const caps: pg.BackendCaps = report.caps;
  const capFields = [caps.conv, caps.int8, caps.int8Storage, caps.int8Kernel, caps.f16Storage, caps.shaderF16, caps.f16Matmul, caps.f16MatmulArithmetic, caps.narrowF16, caps.reducedPrecision, report.emulatedPrecision, caps.storageMantissaBits, caps.arithmeticMantissaBits, caps.maxTextureSide, caps.maxTensorElements, caps.trainingReason];
  const arithmetic: pg.ArithmeticPrecision = caps.arithmetic;
  const verdict: pg.TrainingVerdict = caps.training;
  if (verdict === 'inference-only' && arithmetic === 'mediump') console.log(caps.trainingReason);
  const emulating: pg.InitOptions = { backend: 'webgl1', emulatePrecision: 'half' };
  const threaded: pg.InitOptions = { backend: 'cpu', threads: 'all' };
  const oneThread: pg.InitOptions = { backend: 'cpu', threads: 1 };
  const threads: pg.ThreadsReport = report.threads;
  const threadFields = [threaded, oneThread, threads.count, threads.build, threads.requested, threads.isolated, threads.reason];
  const limits: number = rt.limits.maxElements + rt.limits.maxOpWork;
  const counters = rt.memory();
  const work: number = counters.bytesInUse + counters.allocations + counters.compiles + counters.launches + counters.submissions + counters.readbacks;
  rt.setPoolBudget(64 << 20);
  const trimmed: pg.MemoryInfo = await rt.trim();
  const pools: number = trimmed.liveBytes + trimmed.pooledBytes + trimmed.poolBudget;
  const lost: string | null = rt.lost;
  rt.simulateContextLoss({ restoreAfterMs: null, permanent: false });
  const recovered: { backend: pg.BackendName; tried: pg.BackendTry[] } = await rt.recover();
  const crossOptions: pg.CrossCheckOptions = { layers: [4, 4, 2], activation: 'relu', steps: 3, batch: 8, lr: 0.5, seed: 1, toleranceScale: 1, injectFault: 'sigmoid@1' };
  const check: pg.CrossCheckReport = await rt.crossCheck(crossOptions);
  const failure: pg.CrossCheckRow | null = check.firstFailure;
  const rows: pg.CrossCheckRow[] = check.rows;
  const row = rows[0];
  const rowFields = [row.step, row.tensor, row.op, row.shape, row.maxAbs, row.maxRel, row.worstIndex, row.tolAbs, row.tolRel, row.pass];
  const checkFields = [check.passed, check.summary, check.backend, check.reference, check.config.layers, failure];
  void [same, firstTry, describe, measured, capFields, emulating, threadFields, limits, work, pools, lost, recovered, rowFields, checkFields];

  // Errors
  try {
    pg.tensor([1, 2, 3], [2, 2]);
  } catch (e) {
    if (e instanceof pg.PixelgradError) {
      const kind: pg.PixelgradErrorKind | string = e.kind;
      const fields = [kind, e.op, e.shapes, e.backend, e.panicMessage, e.cause, e.report?.tried, e.message];
      void fields;
    }
  }
  const made = new pg.PixelgradError('fit: bad', { kind: 'invalid', op: 'fit', shapes: [[2, 10]], backend: 'cpu' });
  void made;
  try {
    pg.__testPanic('test', { async: false });
  } catch {
    // kind 'panic'
  }

  // Tensors
  const data: pg.TensorData = new Float32Array([1, 2, 3, 4]);
  const nested: pg.NestedArray = [[1, 2], [3, 4]];
  const tensorOptions: pg.TensorOptions = { check: true };
  const a: pg.Tensor = pg.tensor(data, [2, 2], tensorOptions);
  const b: pg.Tensor = pg.tensor(nested, { check: false });
  const c: pg.Tensor = pg.matmul(a, b);
  const values: Float32Array | Int32Array = await c.data();
  const nestedValues: unknown = await c.array();
  const meta = [c.shape, c.size, c.rank, c.dtype];
  c.dispose();
  void [values, nestedValues, meta];

  // GPU interop (WebGPU): share the page's device, buffers in and out
  const adapter = await navigator.gpu.requestAdapter();
  if (adapter) {
    const gpuDevice: GPUDevice = await adapter.requestDevice();
    const shared: pg.Runtime = await pg.init({ backend: 'webgpu', device: gpuDevice });
    const sharing: boolean | undefined = shared.report.sharedDevice;
    const onDevice: GPUDevice | undefined = shared.gpuDevice;
    const input = gpuDevice.createBuffer({ size: 16, usage: 0x80 | 0x04 | 0x08 }); // STORAGE | COPY_SRC | COPY_DST
    const wrapped: pg.Tensor = await pg.fromGPUBuffer(input, [2, 2], 'float32');
    const exported: GPUBuffer = wrapped.gpuBuffer();
    const mismatch: pg.PixelgradErrorKind = 'deviceMismatch';
    const gpuCanvas = document.createElement('canvas').getContext('webgpu') as GPUCanvasContext | null;
    if (gpuCanvas) await pg.drawHeatmap(wrapped, gpuCanvas, { colormap: 'mask', overlay: true });
    const texture = gpuDevice.createTexture({ size: [2, 2], format: 'rgba8unorm', usage: 0x10 | 0x01 }); // RENDER_ATTACHMENT | COPY_SRC
    await pg.drawHeatmap(wrapped, texture, { colormap: 'heat' });
    const overlayPath: 'gpu' | 'readback' | undefined = shared.report.overlay?.path;
    void overlayPath;
    exported.destroy();
    void [sharing, onDevice, mismatch];
  }
  const glRuntime: pg.Runtime = await pg.init({ backend: 'webgl' });
  const gl: WebGL2RenderingContext | undefined = glRuntime.glContext;
  const texLayout: pg.TextureLayout = glRuntime.textureLayout([2, 3]);
  const glTex = gl ? gl.createTexture() : null;
  if (gl && glTex) {
    gl.bindTexture(gl.TEXTURE_2D, glTex);
    gl.texStorage2D(gl.TEXTURE_2D, 1, texLayout.internalFormat, texLayout.width, texLayout.height);
    const fromGl: pg.Tensor = pg.fromTexture(glTex, [2, 3]);
    const out: pg.TensorTexture = fromGl.texture();
    gl.deleteTexture(out.texture);
    void [out.width, out.height, out.internalFormat];
  }

  // Images and post-processing
  const source: pg.PixelSource = canvas;
  const pixelOptions: pg.FromPixelsOptions = { size: [224, 224], fit: 'cover', channels: 3, layout: 'nchw', mean: [0.485, 0.456, 0.406], std: 0.229, pad: 0, antialias: 'auto', dtype: 'float32' };
  const image = pg.fromPixels(source, pixelOptions);
  const geometry: pg.PixelGeometry = image.geometry;
  const geometryFields = [geometry.x, geometry.y, geometry.width, geometry.height, geometry.scaleX, geometry.scaleY, geometry.offsetX, geometry.offsetY, geometry.sourceWidth, geometry.sourceHeight, geometry.antialiasX, geometry.antialiasY];
  const asyncImage = await pg.fromPixelsAsync(video, { size: [224, 224] });
  const frame: pg.YuvFrame = { format: 'I420', width: 2, height: 2, y: bytes, u: bytes, v: bytes, yStride: 2, uStride: 1, vStride: 1, matrix: 'bt709', fullRange: false };
  const packed: pg.YuvFrame = { format: 'NV12', width: 2, height: 2, data: bytes, layout: [{ offset: 0, stride: 2 }, { offset: 4, stride: 2 }], uv: bytes };
  const yuv = pg.fromYUV(frame, { size: [2, 2] });
  const yuvPacked = pg.fromYUV(packed);
  const box: [number, number, number, number] = pg.toSourceBox([0, 0, 10, 10], geometry);
  const joined: pg.Tensor = pg.concat([image, asyncImage, yuv, yuvPacked], 0);
  const { values: topValues, indices }: { values: pg.Tensor; indices: pg.Tensor } = pg.topk(joined, 5);
  const probabilities: pg.Tensor = pg.softmax(topValues, -1);
  const kept: pg.Tensor = pg.nonMaxSuppression(a, b, { maxOutputs: 10, iouThreshold: 0.5, scoreThreshold: 0.1 });
  const resized: pg.Tensor = pg.resizeBilinear(joined, [112, 112], { antialias: 'never' });
  await pg.drawHeatmap(resized, canvas, { colormap: 'heat', range: [0, 1], overlay: true });
  const drawn: number = await pg.drawBoxes(canvas, [[0, 0, 10, 10]], { geometry, keep: kept, labels: ['cat'], color: '#f00', lineWidth: 2 });
  void [geometryFields, box, indices, probabilities, drawn];

  // Models
  const activation: pg.Activation = 'relu';
  const layerList: pg.LayerConfig[] = [
    pg.layers.conv2d({ filters: 8, kernelSize: 3, strides: 1, padding: 'same', activation, inputShape: [8, 8, 1], trainable: true }),
    pg.layers.maxPooling2d({ poolSize: 2, strides: 2 }),
    pg.layers.batchNormalization({ trainable: true }),
    pg.layers.activation({ activation: 'gelu' }),
    pg.layers.flatten(),
    pg.layers.dropout({ rate: 0.1 }),
    pg.layers.dense({ units: 10 }),
  ];
  const layerType: string = layerList[0].type;
  const decoderLayers: pg.LayerConfig[] = [
    pg.layers.embedding({ inputDim: 9, outputDim: 16, inputShape: [8] }),
    pg.layers.positionEmbedding({ sequenceLength: 8 }),
    pg.layers.transformerBlock({ numHeads: 2, intermediateDim: 32, numKeyValueHeads: 1, activation: 'swiglu', normalization: 'rmsNormalization', epsilon: 1e-5, dropout: 0, useCausalMask: true, rotaryMaxWavelength: 10000 }),
    pg.layers.multiHeadAttention({ numHeads: 2, keyDim: 4, useBias: false, useCausalMask: true, dropout: 0.1 }),
    pg.layers.layerNormalization({ epsilon: 1e-5 }),
    pg.layers.rmsNormalization(),
    pg.layers.dense({ units: 9 }),
  ];
  void decoderLayers;
  const optimizer: pg.OptimizerConfig = pg.optimizers.sgd(0.1, 0.9);
  const optimizerFields = [optimizer.name, optimizer.learningRate, optimizer.momentum];
  const others: pg.OptimizerConfig[] = [pg.optimizers.adam(1e-3), pg.optimizers.adamw(), pg.optimizers.momentum(), pg.optimizers.nesterov(), pg.optimizers.rmsprop()];
  const optimizerName: pg.OptimizerName = others[0].name;
  const loss: pg.LossName = 'softmaxCrossEntropy';
  const compileOptions: pg.CompileOptions = { optimizer: optimizerName, loss, metrics: ['accuracy'], precision: 'mixed' };
  const model: pg.Sequential = pg.sequential({ layers: layerList, seed: 1 }, { seed: 2 });
  model.compile(compileOptions);
  const precision: pg.PrecisionInfo = model.precision;
  const precisionFields = [precision.requested, precision.precision, precision.fallback];
  const scale = await model.lossScale();
  const modelFields = [model.stopTraining, model.backend, model.inputShape, model.weightInfo(), model.summary(), model.layouts(), scale?.scale, scale?.skippedSteps];
  model.stopTraining = false;

  const digits = pg.data.digits();
  const split: pg.DataSplit = digits.train;
  const mnist = pg.data.parseMnist(bytes, bytes.buffer);
  const x = pg.tensor(split.x, [split.n, ...digits.inputShape]);
  const y = pg.tensor(split.y, [split.n]);
  const logs: pg.Logs[] = [];
  const fitOptions: pg.FitOptions = {
    epochs: 2,
    batchSize: 32,
    shuffle: true,
    seed: 1,
    readEvery: 10,
    validationData: [x, y],
    maxStepsPerSecond: () => undefined,
    onBatchEnd: (step: number, l: pg.Logs) => {
      logs.push(l);
      return step === 1 ? 'step' : undefined;
    },
    onEpochEnd: (_epoch: number, l: pg.Logs) => {
      void [l.loss, l.accuracy, l.valLoss, l.valAccuracy];
    },
    callbacks: {},
    checkpointEvery: 100,
    stopOnNaN: true,
    onDeviceLost: (info: pg.DeviceLostInfo) => {
      void [info.step, info.checkpointStep, info.redo, info.lostBackend, info.reason, info.backend, info.tried, info.recoveryMs];
    },
    maxRecoveries: 5,
    autosave: 'indexeddb://run',
    autosaveEvery: 500,
    resume: 'indexeddb://run',
    signal: new AbortController().signal,
  };
  const history: pg.History = await model.fit(x, y, fitOptions);
  const historyFields = [history.history.loss, history.history.accuracy, history.history.valLoss, history.history.valAccuracy, history.epoch, history.checkpoints.every, history.checkpoints.taken, history.checkpoints.ms, history.checkpoints.bytes, history.deviceLosses, history.stopped?.restoredStep, history.resumedFrom, history.storagePersisted];
  const evaluated: { loss: number; accuracy?: number } = await model.evaluate(x, y, { batchSize: 256 });
  const predicted: pg.Tensor = model.predict(x);
  await model.drawWeights(0, canvas);
  const hidden: pg.Tensor = model.activations(x, 1);
  await model.drawActivations(x, 1, canvas);
  const saved: { url: string; bytes: number } = await model.save('indexeddb://digits');
  const checkpoint: pg.Checkpoint = await model.checkpoint();
  const checkpointFields = [checkpoint.step, checkpoint.bytes, checkpoint.isFinite, checkpoint.weights(), model.lastCheckpoint];
  const restored: { step: number; backend: pg.BackendName } = await model.restore(checkpoint);
  const weights: Record<string, pg.Tensor> = await model.getWeights();
  await model.setWeights(weights);
  const onnxBytes: Uint8Array = await model.toOnnx();
  const table: pg.LayoutRow[] = rt.layouts(model);
  const layoutRow = table[0];
  const layoutFields = [layoutRow.name, layoutRow.shape, layoutRow.elements, layoutRow.memory, layoutRow.width, layoutRow.height, layoutRow.format, layoutRow.used, layoutRow.allocated, layoutRow.layout, layoutRow.bytes];
  const reloaded: pg.Sequential = await pg.loadModel(saved.url);
  const list = await pg.listModels();
  const listed = [list[0].name, list[0].url, list[0].savedAt, list[0].bytes, list[0].backend];
  await pg.removeModel(saved.url);
  reloaded.dispose();
  void [layerType, optimizerFields, precisionFields, modelFields, mnist.imageShape, historyFields, evaluated, predicted, hidden, checkpointFields, restored, layoutFields, listed];

  // ONNX
  const onnx: pg.OnnxModel = await pg.loadOnnx(onnxBytes, { precision: 'auto', int8Activations: '8bit' });
  const input: pg.OnnxValueInfo = onnx.inputs[0];
  const info = onnx.info;
  const onnxFields = [input.name, input.shape, input.dtype, onnx.outputs, onnx.backend, info.precision, info.precisionGroups.int8, info.path, info.weightStorage, info.weightBytes, info.deviceWeightBytes, info.deviceTableBytes, info.activationStorage, info.activationBytes, info.arithmetic, info.shaderF16];
  const op = info.operators[0];
  const described = [info.irVersion, info.producer, info.opsets[0].domain, info.nodes, op.op, op.count, op.backends.webgl, op.note, info.weightBytesByType.float?.bytes, info.packedWeights.packedBytes, info.packedWeights.f32Bytes, info.packedWeights.nodes, info.externalData, info.loads, info.refused];
  const external: pg.OnnxExternalData = { 'model.onnx_data': new Uint8Array(4) };
  const withData: pg.OnnxModel = await pg.loadOnnx('/model.onnx', { externalData: external });
  const inspection: pg.OnnxInspection = await pg.inspectOnnx(onnxBytes, { externalData: { 'model.onnx_data': '/model.onnx_data' } });
  void [described, withData, inspection.loads, inspection.refused, inspection.inputs, inspection.operators];
  const outputs: Record<string, pg.Tensor> = await onnx.run({ [input.name]: x }, { signal: new AbortController().signal, maxWork: 1e9 });
  const genOptions: pg.OnnxGenerateOptions = {
    maxTokens: 8, temperature: 0.7, topK: 40, topP: 0.9, stop: [2], seed: 1, useCache: true,
    onToken: (t: number) => t !== 2, signal: new AbortController().signal,
  };
  const generated: pg.OnnxGeneration = await onnx.generate([1, 5, 9], genOptions);
  const perSecond: number = generated.tokensPerSecond + generated.decodeTokensPerSecond + generated.prefillMs + generated.decodeMs;
  const why: 'maxTokens' | 'stop' | 'onToken' = generated.stopped;
  void [generated.tokens, generated.stopToken, generated.cached, generated.steps, perSecond, why];
  const onnxSaved = await onnx.save('indexeddb://model');
  const head = pg.sequential([pg.layers.onnx({ model: onnx, output: 'features', trainable: false }), pg.layers.dense({ units: 2 })]);
  onnx.dispose();
  void [onnxFields, outputs, onnxSaved, head];

  // Tokenizers
  const tok: pg.Tokenizer = await pg.tokenizer('{"model": {"type": "WordPiece"}}');
  const tokOptions: pg.TokenizerOptions = { wasmUrl: new URL('pixelgrad_text_bg.wasm', location.href) };
  const fromBytes: pg.Tokenizer = await pg.tokenizer(new Uint8Array(0), tokOptions);
  const enc: pg.TokenizerEncoding = tok.encode('hello world', { addSpecialTokens: false });
  const [start, end]: [number, number] = enc.offsets[0];
  const text: string = tok.decode(enc.ids, { skipSpecialTokens: true }) + tok.decode(new Uint32Array([1, 2]));
  const lookups: [number, number | undefined, string | undefined] = [tok.vocabSize, tok.tokenToId('[CLS]'), tok.idToToken(0)];
  tok.dispose();
  void [fromBytes, enc.tokens, start, end, text, lookups];

  // Federated learning
  const shard = pg.flower.partition(digits, { index: 0, count: 2, alpha: 0.5, seed: 42 });
  const localDp: pg.LocalDpOptions = { epsilon: 1, delta: 1e-5, clippingNorm: 1, sensitivity: 1 };
  const events: pg.FlowerEvent[] = [];
  const joinOptions: pg.FlowerJoinOptions = {
    server: 'http://127.0.0.1:8080',
    model,
    data: shard,
    onRound: (r) => void [r.round, r.accuracy, r.loss, r.examples, r.train],
    onEvent: (e) => events.push(e),
    signal: new AbortController().signal,
    epochs: 1,
    batchSize: 32,
    lr: 0.1,
    seed: 1,
    localDp,
    syncWeights: true,
  };
  const key: pg.FlowerNodeKey | null = await pg.flower.nodeKey({ name: 'node', create: true });
  const keyFields = key ? [key.name, key.publicKey.length, key.openssh, key.fingerprint, (await key.sign(new Uint8Array(1))).byteLength] : [];
  const forgot: boolean = await pg.flower.forgetNodeKey({ name: 'node' });
  void [keyFields, forgot];
  const secured: pg.FlowerJoinOptions = {
    ...joinOptions,
    nodeKey: key ?? undefined,
    timeout: 60,
    maxEpochs: 5,
    maxRounds: 10,
    secagg: true,
    distributedDp: { noiseMultiplier: 1, clippingNorm: 5, delta: 1e-5 },
    maxEpsilon: 8,
    shareMetrics: 'minimal',
  };
  void secured;
  const joined2 = await pg.flower.join(joinOptions);
  const joinFields = [joined2.nodeId, joined2.runId, joined2.rounds, joined2.evaluations, joined2.bytesUp, joined2.bytesDown];
  void joinFields;
}
