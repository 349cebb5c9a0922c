// `pg.drawHeatmap` onto a WebGPU canvas (a GPUCanvasContext) or a GPUTexture on the WebGPU
// runtime: the map is colour-mapped on the device (the same kernel as the 2D path) and drawn by
// one render pass reading the colours' buffer, so no pixel comes back to the CPU (the 2D-canvas
// path reads the 8-bit image back and puts it on the canvas). A canvas context is configured
// with the runtime's device (`rt.gpuDevice`) unless it already is; with `overlay` the map is
// stretched over what the target holds (what the page drew into it this frame), alpha-blended;
// without, a canvas takes the map's size and a texture is cleared first. Texels are sampled
// nearest.

const SHADER = /* wgsl */ `
  struct P { w: u32, h: u32, cw: f32, ch: f32 }
  @group(0) @binding(0) var<storage, read> px: array<vec4<f32>>;
  @group(0) @binding(1) var<uniform> p: P;
  @vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    // one triangle over the whole target
    return vec4<f32>(f32((i << 1u) & 2u) * 2.0 - 1.0, f32(i & 2u) * 2.0 - 1.0, 0.0, 1.0);
  }
  @fragment fn fs(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    let x = min(u32(pos.x * f32(p.w) / p.cw), p.w - 1u);
    let y = min(u32(pos.y * f32(p.h) / p.ch), p.h - 1u);
    let c = px[y * p.w + x] / 255.0;
    return vec4<f32>(c.rgb * c.a, c.a); // premultiplied
  }`;

/** @type {WeakMap<GPUDevice, Map<string, GPURenderPipeline>>} */
const pipelines = new WeakMap();

function pipeline(device, format) {
  let m = pipelines.get(device);
  if (!m) pipelines.set(device, (m = new Map()));
  let p = m.get(format);
  if (!p) {
    const module = device.createShaderModule({ label: 'pixelgrad heatmap', code: SHADER });
    const blend = { color: { srcFactor: 'one', dstFactor: 'one-minus-src-alpha' }, alpha: { srcFactor: 'one', dstFactor: 'one-minus-src-alpha' } };
    p = device.createRenderPipeline({
      label: 'pixelgrad heatmap',
      layout: 'auto',
      vertex: { module, entryPoint: 'vs' },
      fragment: { module, entryPoint: 'fs', targets: [{ format, blend }] },
      primitive: { topology: 'triangle-list' },
    });
    m.set(format, p);
  }
  return p;
}

/** True for a WebGPU canvas context (`canvas.getContext('webgpu')`) or a GPUTexture. */
export function isGpuTarget(target) {
  return (typeof GPUCanvasContext !== 'undefined' && target instanceof GPUCanvasContext) || (typeof GPUTexture !== 'undefined' && target instanceof GPUTexture);
}

const RENDER_ATTACHMENT = 0x10;
const FORMATS = new Set(['rgba8unorm', 'rgba8unorm-srgb', 'bgra8unorm', 'bgra8unorm-srgb', 'rgba16float', 'rgba32float']);

/**
 * The view to draw into and its size and format: a GPUTexture as it is (2D, RENDER_ATTACHMENT,
 * a colour format listed above; the map is stretched over it), or a canvas context's current
 * texture (configured with the runtime's device unless it already is; without `overlay` the
 * canvas takes the map's size `w` x `h`).
 */
function targetOf(rt, device, target, w, h, overlay) {
  if (typeof GPUTexture !== 'undefined' && target instanceof GPUTexture) {
    if (!(target.usage & RENDER_ATTACHMENT)) throw new Error(`drawHeatmap: the texture's usage (${target.usage}) lacks GPUTextureUsage.RENDER_ATTACHMENT`);
    if (!FORMATS.has(target.format) || target.dimension !== '2d') throw new Error(`drawHeatmap: a ${target.dimension} ${target.format} texture cannot be drawn into; use a 2d texture of ${[...FORMATS].join(', ')}`);
    return { view: target.createView({ dimension: '2d', baseArrayLayer: 0, arrayLayerCount: 1, baseMipLevel: 0, mipLevelCount: 1 }), format: target.format, cw: target.width, ch: target.height };
  }
  if (rt.report.software) {
    // (web/bench/probe/gpu-canvas.mjs: the first frame rendered into a WebGPU canvas destroys
    // the page's WebGPU instance on Chromium's SwiftShader)
    throw new Error(`drawHeatmap: software adapter '${rt.report.adapter}': drawing into a WebGPU canvas destroys its WebGPU instance; draw into a 2D canvas or a GPUTexture`);
  }
  const ctx = target;
  const canvas = ctx.canvas;
  if (!overlay && (canvas.width !== w || canvas.height !== h)) {
    canvas.width = w;
    canvas.height = h;
  }
  let conf = typeof ctx.getConfiguration === 'function' ? ctx.getConfiguration() : null;
  if (!conf || conf.device !== device) {
    ctx.configure({ device, format: navigator.gpu.getPreferredCanvasFormat(), alphaMode: 'premultiplied' });
    conf = null;
  }
  const format = (conf && conf.format) || navigator.gpu.getPreferredCanvasFormat();
  return { view: ctx.getCurrentTexture().createView(), format, cw: canvas.width, ch: canvas.height };
}

/**
 * Draws the device tensor `rgba` (`[h * w, 4]`, values 0..255, rows in order) of runtime `rt`
 * into `target` (a WebGPU canvas context or a GPUTexture of the runtime's device), checked by a
 * validation error scope: resolves to null, or to the GPUError of a refused draw (a texture of
 * another device).
 */
export async function drawOnGpu(rt, rgba, w, h, target, overlay) {
  const device = rt._inner.gpuDevice;
  device.pushErrorScope('validation');
  let thrown = null;
  try {
    const { view, format, cw, ch } = targetOf(rt, device, target, w, h, overlay);
    const { buffer, bytes } = rt._inner.exportGpuBuffer(rgba);
    const params = device.createBuffer({ label: 'pixelgrad heatmap size', size: 16, usage: 0x40 | 0x08 }); // UNIFORM | COPY_DST
    const pv = new ArrayBuffer(16);
    new Uint32Array(pv, 0, 2).set([w, h]);
    new Float32Array(pv, 8, 2).set([cw, ch]);
    device.queue.writeBuffer(params, 0, pv);
    const pipe = pipeline(device, format);
    const bind = device.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer, offset: 0, size: bytes } },
        { binding: 1, resource: { buffer: params } },
      ],
    });
    const enc = device.createCommandEncoder({ label: 'pixelgrad heatmap' });
    const pass = enc.beginRenderPass({
      colorAttachments: [{ view, loadOp: overlay ? 'load' : 'clear', clearValue: { r: 0, g: 0, b: 0, a: 0 }, storeOp: 'store' }],
    });
    pass.setPipeline(pipe);
    pass.setBindGroup(0, bind);
    pass.draw(3);
    pass.end();
    device.queue.submit([enc.finish()]);
    params.destroy(); // after the submit that uses it: freed once that work is done
  } catch (e) {
    thrown = e;
  }
  // popped on every path, so a refused target leaves the device's scopes balanced
  const err = await device.popErrorScope();
  if (thrown) throw thrown;
  return err;
}
