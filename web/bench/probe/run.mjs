// WebGPU kernel probe in headless Chromium (SwiftShader): per-kernel pipeline compile time and
// matmul speed per kernel variant and shape, with raw WebGPU (no pixelgrad runtime), to choose
// kernels by measurement. Not a test; not part of `cargo xtask bench`.
//
//   rustc --edition 2021 -O -o /tmp/dump_wgsl crates/pixelgrad-wgpu/examples/dump_wgsl.rs
//   /tmp/dump_wgsl 16x16x8 8x8x8 4x4x16 > /tmp/wgsl.json
//   node web/bench/probe/run.mjs --generated /tmp/wgsl.json [--compile] [--speed] [--only NAME,...]
//                                [--compile-reps N] [--shapes M:N:K:TA:TB:BATCH,...] [--reps N] [--json FILE]
//
// --compile: every kernel of crates/pixelgrad-wgpu/src/kernels (with the common prelude) and
//   every generated one, each override set the backend uses, compiled one by one: time from
//   createComputePipeline to the queue being idle (Chromium compiles in the GPU process), then
//   the first one-workgroup dispatch (in case the driver compiles lazily); median of
//   --compile-reps fresh copies.
// --speed: matmul GFLOP/s of each matmul variant on each shape (default: the shapes of the
//   benchmark's training steps and square 256..1024), median of --reps timed submissions.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, newPage, browserVersion, webRoot } from '../../tests/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const kernelDir = path.resolve(here, '..', '..', '..', 'crates', 'pixelgrad-wgpu', 'src', 'kernels');

function parseArgs(argv) {
  const a = { compileReps: 1, generated: null, compile: false, speed: false, only: null, shapes: null, reps: 5, json: null, asyncTest: false };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    const next = () => argv[++i];
    if (v === '--generated') a.generated = next();
    else if (v === '--compile') a.compile = true;
    else if (v === '--speed') a.speed = true;
    else if (v === '--async') a.asyncTest = true;
    else if (v === '--only') a.only = next().split(',');
    else if (v === '--shapes') a.shapes = next().split(',');
    else if (v === '--reps') a.reps = Number(next());
    else if (v === '--compile-reps') a.compileReps = Number(next());
    else if (v === '--json') a.json = next();
    else throw new Error(`unknown argument ${v}`);
  }
  if (!a.compile && !a.speed && !a.asyncTest) a.compile = a.speed = true;
  return a;
}

// Override sets each kernel is compiled with in a training step (see the launchers in
// crates/pixelgrad-wgpu/src/ops); for the compile table one representative set each.
const fixedKernels = {
  unary: { inputs: 1, constants: [{ OP: 1 }, { OP: 6 }, { OP: 12 }] },
  binary: { inputs: 2, constants: [{ OP: 0, FAST: 1 }, { OP: 2, FAST: 0 }] },
  where: { inputs: 3, constants: [{ FAST: 1 }] },
  reduce: { inputs: 1, constants: [{ OP: 0, TREE: 1 }, { OP: 0, TREE: 0 }] },
  fill: { inputs: 0, constants: [{}] },
  random: { inputs: 0, constants: [{ NORMAL: 0 }] },
  copy: { inputs: 1, constants: [{}] },
  gather: { inputs: 2, constants: [{}], status: true },
  scatter_add: { inputs: 2, constants: [{}], status: true },
  im2col: { inputs: 1, constants: [{}] },
  col2im: { inputs: 1, constants: [{}] },
  matmul: { inputs: 2, constants: [{ TRANS_A: 0, TRANS_B: 0 }, { TRANS_A: 1, TRANS_B: 0 }, { TRANS_A: 0, TRANS_B: 1 }], tile: [64, 64] },
  matmul_big: { inputs: 2, constants: [{ TRANS_A: 0, TRANS_B: 0 }], tile: [128, 128] },
};

// Matmul shapes of the benchmark's steps (traced from the native first_step example):
// [M, N, K, transA, transB, batch, what]. A is batch-1 (broadcast) in the conv rows, as there.
const defaultShapes = [
  [1, 64, 48, 0, 0, 1, 'seed fwd1'],
  [64, 2, 1, 1, 0, 1, 'seed dW1'],
  [64, 128, 784, 0, 0, 1, 'mnist fwd1'],
  [64, 10, 128, 0, 0, 1, 'mnist fwd2'],
  [128, 10, 64, 1, 0, 1, 'mnist dW2'],
  [64, 128, 10, 0, 1, 1, 'mnist dh'],
  [784, 128, 64, 1, 0, 1, 'mnist dW1'],
  [8, 676, 9, 0, 0, 32, 'cnn conv1 fwd'],
  [8, 9, 676, 0, 1, 32, 'cnn conv1 dW'],
  [16, 121, 72, 0, 0, 32, 'cnn conv2 fwd'],
  [16, 72, 121, 0, 1, 32, 'cnn conv2 dW'],
  [72, 121, 16, 1, 0, 32, 'cnn conv2 dcol'],
  [32, 10, 400, 0, 0, 1, 'cnn dense fwd'],
  [400, 10, 32, 1, 0, 1, 'cnn dense dW'],
  [256, 256, 256, 0, 0, 1, 'square 256'],
  [512, 512, 512, 0, 0, 1, 'square 512'],
  [1024, 1024, 1024, 0, 0, 1, 'square 1024'],
];

/** Runs in the page: compiles and times. */
async function inPage({ kernels, compile, speed, shapes, reps, asyncTest, compileReps }) {
  const now = () => performance.now();
  const adapter = await navigator.gpu.requestAdapter();
  const lim = adapter.limits;
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize,
      maxBufferSize: lim.maxBufferSize,
      maxComputeWorkgroupsPerDimension: lim.maxComputeWorkgroupsPerDimension,
    },
  });
  const errors = [];
  device.addEventListener('uncapturederror', (e) => errors.push(e.error.message));
  const layouts = new Map();
  const layoutFor = (inputs, status) => {
    const key = `${inputs}${status ? 's' : ''}`;
    if (!layouts.has(key)) {
      const entries = [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform' } }];
      for (let i = 0; i <= inputs; i++)
        entries.push({ binding: 1 + i, visibility: GPUShaderStage.COMPUTE, buffer: { type: i < inputs ? 'read-only-storage' : 'storage' } });
      if (status) entries.push({ binding: 2 + inputs, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } });
      const bgl = device.createBindGroupLayout({ entries });
      layouts.set(key, { bgl, pl: device.createPipelineLayout({ bindGroupLayouts: [bgl] }) });
    }
    return layouts.get(key);
  };
  const buf = (bytes, usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC) =>
    device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 16) * 16), usage });
  const uniform = (words) => {
    const b = buf(256, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
    device.queue.writeBuffer(b, 0, new Uint32Array([...words, ...new Array(64 - words.length).fill(0)]));
    return b;
  };
  const bindAll = (k, bufs) =>
    device.createBindGroup({ layout: layoutFor(k.inputs, k.status).bgl, entries: bufs.map((b, i) => ({ binding: i, resource: { buffer: b } })) });
  const run = async (pipeline, group, grid, times = 1) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    for (let i = 0; i < times; i++) pass.dispatchWorkgroups(...grid);
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  const modules = new Map();
  const moduleOf = (name) => {
    if (!modules.has(name)) modules.set(name, device.createShaderModule({ code: kernels[name].code }));
    return modules.get(name);
  };
  const pipelines = new Map();
  const out = { adapter: `${adapter.info.vendor} ${adapter.info.architecture} ${adapter.info.description}`.trim(), compile: [], speed: [], async: null, errors };

  if (compile) {
    // compileReps rounds over all kernels (interleaved, so load drifts hit each alike); each
    // round compiles a fresh copy (a unique comment defeats Chromium's pipeline cache).
    const samples = new Map();
    for (let round = 0; round < compileReps; round++) {
      for (const [name, k] of Object.entries(kernels)) {
        for (const constants of k.constants) {
          const t0 = now();
          const m = round === 0 ? moduleOf(name) : device.createShaderModule({ code: `// round ${round} ${Math.random()}\n${k.code}` });
          const p = device.createComputePipeline({ layout: layoutFor(k.inputs, k.status).pl, compute: { module: m, entryPoint: 'main', constants } });
          await device.queue.onSubmittedWorkDone();
          const t1 = now();
          const bufs = [uniform([1, 1, 1, 0, 0, 0, 0, 0, 1, 1])];
          for (let i = 0; i <= k.inputs; i++) bufs.push(buf(1 << 16));
          if (k.status) bufs.push(buf(256));
          await run(p, bindAll(k, bufs), [1, 1, 1]);
          const t2 = now();
          if (round === 0) pipelines.set(k.cpu ? `${name} ${k.strided ? 'strided1' : '00111'}` : `${name} ${JSON.stringify(constants)}`, p);
          const key = `${name} ${JSON.stringify(constants)}`;
          if (!samples.has(key)) samples.set(key, { name, constants, bytes: k.code.length, create: [], first: [] });
          samples.get(key).create.push(t1 - t0);
          samples.get(key).first.push(t2 - t1);
        }
      }
    }
    const med = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
    for (const v of samples.values()) out.compile.push({ name: v.name, constants: v.constants, bytes: v.bytes, createMs: med(v.create), firstDispatchMs: med(v.first), all: v.create.map(Math.round) });
  }

  if (asyncTest) {
    // Four fresh pipelines (a comment makes each source new, so no cache hits): one after
    // another with createComputePipeline, then four at once with createComputePipelineAsync.
    const name = Object.keys(kernels).find((n) => n.startsWith('matmul_cpu')) ?? 'unary';
    const k = kernels[name];
    const fresh = (tag) => device.createShaderModule({ code: `// ${tag} ${Math.random()}\n${k.code}` });
    const t0 = now();
    for (let i = 0; i < 4; i++) {
      device.createComputePipeline({ layout: layoutFor(k.inputs, k.status).pl, compute: { module: fresh('sync' + i), entryPoint: 'main', constants: k.constants[0] } });
    }
    await device.queue.onSubmittedWorkDone();
    const t1 = now();
    await Promise.all(
      [0, 1, 2, 3].map((i) =>
        device.createComputePipelineAsync({ layout: layoutFor(k.inputs, k.status).pl, compute: { module: fresh('async' + i), entryPoint: 'main', constants: k.constants[0] } }),
      ),
    );
    const t2 = now();
    out.async = { kernel: name, syncFourMs: t1 - t0, asyncFourMs: t2 - t1 };
  }

  if (speed) {
    for (const [M, N, K, ta, tb, batch, what] of shapes) {
      // Conv matmuls broadcast a batch-1 A (weights) against a batched B, as pixelgrad does.
      const aBatch = batch > 1 && what.includes('dW') ? batch : 1;
      const a = buf(aBatch * M * K * 4), b = buf(batch * K * N * 4), c = buf(batch * M * N * 4);
      const fill = (n) => Float32Array.from({ length: n }, (_, i) => ((i * 7919 + n) % 1000) / 1000 - 0.5);
      const hostA = fill(aBatch * M * K), hostB = fill(batch * K * N);
      device.queue.writeBuffer(a, 0, hostA);
      device.queue.writeBuffer(b, 0, hostB);
      const flops = 2 * M * N * K * batch;
      for (const [name, k] of Object.entries(kernels)) {
        if (!k.grid) continue;
        const vecA = ta ? M % 4 === 0 : K % 4 === 0;
        const vecB = tb ? K % 4 === 0 : N % 4 === 0;
        const layout = k.strided ? `strided${N % 4 === 0 ? 1 : 0}` : `${ta}${tb}${vecA ? 1 : 0}${vecB ? 1 : 0}${N % 4 === 0 ? 1 : 0}`;
        const constants = k.cpu ? {} : { TRANS_A: ta, TRANS_B: tb };
        const key = k.cpu ? `${name} ${layout}` : `${name} ${JSON.stringify(constants)}`;
        const t0 = now();
        if (!pipelines.has(key)) {
          const module = k.cpu ? device.createShaderModule({ code: k.layouts[layout] }) : moduleOf(name);
          pipelines.set(key, device.createComputePipeline({ layout: layoutFor(2).pl, compute: { module, entryPoint: 'main', constants } }));
        }
        const p = pipelines.get(key);
        const [tm, tn] = k.grid;
        const grid = [Math.ceil(N / tn), Math.ceil(M / tm), batch];
        // Strided kernels: A(r, k) at r * a_rs + k * a_ks, B(k, c) at k * b_ks + c * b_cs.
        const strides = k.strided ? [ta ? 1 : K, ta ? M : 1, tb ? 1 : N, tb ? K : 1] : [];
        const g = bindAll(k, [uniform([M, N, K, aBatch > 1 ? M * K : 0, batch > 1 ? K * N : 0, ...strides]), a, b, c]);
        await run(p, g, grid);
        const compileMs = now() - t0;
        // Enough dispatches per submission for ~50 ms, at least one.
        const t1 = now();
        await run(p, g, grid);
        const one = Math.max(now() - t1, 0.01);
        const times = Math.max(1, Math.min(1000, Math.round(50 / one)));
        const rates = [];
        for (let r = 0; r < reps; r++) {
          const t = now();
          await run(p, g, grid, times);
          rates.push((flops * times) / ((now() - t) / 1000) / 1e9);
        }
        rates.sort((x, y) => x - y);
        // Check 64 entries against a CPU product (catches a wrong kernel, not just a slow one).
        const rb = device.createBuffer({ size: batch * M * N * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        const enc = device.createCommandEncoder();
        enc.copyBufferToBuffer(c, 0, rb, 0, batch * M * N * 4);
        device.queue.submit([enc.finish()]);
        await rb.mapAsync(GPUMapMode.READ);
        const got = new Float32Array(rb.getMappedRange().slice(0));
        rb.unmap();
        rb.destroy();
        let maxErr = 0;
        for (let t = 0; t < 64; t++) {
          const z = (t * 7) % batch, i = (t * 31) % M, j = (t * 17 + 5) % N;
          let want = 0, mag = 0;
          for (let q = 0; q < K; q++) {
            const av = hostA[(aBatch > 1 ? z * M * K : 0) + (ta ? q * M + i : i * K + q)];
            const bv = hostB[(batch > 1 ? z * K * N : 0) + (tb ? j * K + q : q * N + j)];
            want += av * bv;
            mag += Math.abs(av * bv);
          }
          maxErr = Math.max(maxErr, Math.abs(got[z * M * N + i * N + j] - want) / Math.max(mag, 1e-30));
        }
        out.speed.push({ what, M, N, K, ta, tb, batch, kernel: name, gflops: rates[rates.length >> 1], msPerCall: flops / (rates[rates.length >> 1] * 1e6), compileOrCachedMs: compileMs, maxErr });
      }
      a.destroy(), b.destroy(), c.destroy();
    }
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const common = fs.readFileSync(path.join(kernelDir, 'common.wgsl'), 'utf8');
  const kernels = {};
  for (const [name, k] of Object.entries(fixedKernels)) {
    kernels[name] = { ...k, code: `${common}\n${fs.readFileSync(path.join(kernelDir, `${name}.wgsl`), 'utf8')}`, grid: k.tile ?? null };
  }
  if (args.generated) {
    // { "matmul_cpu_RxCxL": { "TTVVV": wgsl } }: one source per operand layout (trans_a,
    // trans_b, vec_a, vec_b, vec_c); the compile table uses the plain layout 00111.
    for (const [name, layouts] of Object.entries(JSON.parse(fs.readFileSync(args.generated, 'utf8')))) {
      const [rows, cols, lanes] = name.replace('matmul_cpu_', '').split('x').map(Number);
      const withPrelude = Object.fromEntries(Object.entries(layouts).map(([l, src]) => [l, `${common}\n${src}`]));
      const grid = [rows, cols * lanes];
      kernels[name] = { inputs: 2, code: withPrelude['00111'], layouts: withPrelude, cpu: true, grid, constants: [{}] };
      if (withPrelude.strided1) kernels[`${name}_strided`] = { inputs: 2, code: withPrelude.strided1, layouts: withPrelude, cpu: true, strided: true, grid, constants: [{}] };
    }
  }
  for (const n of Object.keys(kernels)) if (args.only && !args.only.includes(n)) delete kernels[n];
  const shapes = args.shapes
    ? args.shapes.map((s) => {
        const [m, n, k, ta = 0, tb = 0, batch = 1] = s.split(':').map(Number);
        return [m, n, k, ta, tb, batch, s];
      })
    : defaultShapes;

  const server = await startServer(webRoot);
  const browser = await launchBrowser();
  try {
    const page = await newPage(browser);
    await page.goto(`${server.url}/tests/pages/blank.html`);
    console.log(`${await browserVersion(browser)}`);
    const res = await page.evaluate(inPage, { kernels, compile: args.compile, speed: args.speed, shapes, reps: args.reps, asyncTest: args.asyncTest, compileReps: args.compileReps });
    console.log(`adapter: ${res.adapter}`);
    if (res.compile.length) {
      console.log('\ncompile (ms): create = createComputePipeline until the queue is idle; first = first 1-workgroup dispatch');
      for (const c of res.compile)
        console.log(`${c.name.padEnd(22)} ${JSON.stringify(c.constants).padEnd(44)} ${String(c.bytes).padStart(7)} B  create ${c.createMs.toFixed(0).padStart(6)}  first ${c.firstDispatchMs.toFixed(0).padStart(5)}${c.all.length > 1 ? `  (all: ${c.all.join(' ')})` : ''}`);
    }
    if (res.async) console.log(`\nfour fresh ${res.async.kernel} pipelines: sync one after another ${res.async.syncFourMs.toFixed(0)} ms, createComputePipelineAsync all at once ${res.async.asyncFourMs.toFixed(0)} ms`);
    if (res.speed.length) {
      console.log('\nspeed: GFLOP/s (ms per call) [compile ms on first use]; results checked against the CPU');
      let last = null;
      for (const s of res.speed) {
        if (s.what !== last) console.log(`${s.what} (${s.M}x${s.N}x${s.K} ta${s.ta} tb${s.tb} batch ${s.batch})`);
        last = s.what;
        console.log(`  ${s.kernel.padEnd(22)} ${s.gflops.toFixed(3).padStart(8)} (${s.msPerCall.toFixed(2)} ms) [${s.compileOrCachedMs.toFixed(0)}]${s.maxErr > 1e-5 ? ` WRONG: max rel error ${s.maxErr.toExponential(2)}` : ''}`);
      }
    }
    if (res.errors.length) console.log(`\nWebGPU errors:\n${res.errors.join('\n')}`);
    if (args.json) fs.writeFileSync(args.json, JSON.stringify(res, null, 1));
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
