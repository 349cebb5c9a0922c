// Low-end GPUs in Chromium (issue 44): SwiftShader offers 32-bit float render targets and highp
// everywhere, so a page shim (test code, installed before the package loads) makes the WebGL
// contexts look like a phone's: `getExtension` / `getSupportedExtensions` stop offering the
// extensions named in `window.pgShim.hide` (so they are never enabled, and WebGL itself then
// refuses what they would allow: an RGBA32F render target without EXT_color_buffer_float is
// an incomplete framebuffer), and with `window.pgShim.noHighp` `getShaderPrecisionFormat`
// reports fragment `highp` float as absent (range and precision 0, as the WebGL specification
// has such a device report). Each refusal and fallback branch of init is reached here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { apiPage } from './api-page.mjs';

function shim() {
  window.pgShim = { hide: [], noHighp: false };
  for (const C of [window.WebGL2RenderingContext, window.WebGLRenderingContext]) {
    if (!C) continue;
    const p = C.prototype;
    const getExtension = p.getExtension;
    const getSupportedExtensions = p.getSupportedExtensions;
    const getShaderPrecisionFormat = p.getShaderPrecisionFormat;
    p.getExtension = function (name) {
      return window.pgShim.hide.includes(name) ? null : getExtension.call(this, name);
    };
    p.getSupportedExtensions = function () {
      const all = getSupportedExtensions.call(this);
      return all && all.filter((n) => !window.pgShim.hide.includes(n));
    };
    p.getShaderPrecisionFormat = function (shader, type) {
      const f = getShaderPrecisionFormat.call(this, shader, type);
      if (window.pgShim.noHighp && shader === this.FRAGMENT_SHADER && (type === this.HIGH_FLOAT || type === this.HIGH_INT)) {
        return { rangeMin: 0, rangeMax: 0, precision: 0 };
      }
      return f;
    };
  }
}

const { inPage } = apiPage({ initScript: shim });

/** init(opts) under the shim settings `s`: the report, or the refusal's message and reasons. */
const initWith = (s, opts) =>
  inPage(async (pg, [s, opts]) => {
    Object.assign(window.pgShim, s);
    try {
      const rt = await pg.init(opts);
      return { ok: true, format: rt.report.format, warnings: rt.report.warnings, name: rt.report.name };
    } catch (e) {
      return { ok: false, message: e.message, tried: e.report && e.report.tried };
    } finally {
      Object.assign(window.pgShim, { hide: [], noHighp: false });
    }
  }, [s, opts]);

test('shim: WebGL2 without EXT_color_buffer_float falls back to RGBA16F and says so', async () => {
  const full = await initWith({}, { backend: 'webgl' });
  assert.ok(full.ok, JSON.stringify(full));
  assert.equal(full.format, 'RGBA32F');
  const r = await initWith({ hide: ['EXT_color_buffer_float'] }, { backend: 'webgl' });
  process.stderr.write(`[lowend half-only webgl2] ${JSON.stringify(r)}\n`);
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.format, 'RGBA16F');
  assert.ok(r.warnings.some((w) => /falling back to RGBA16F/.test(w)), JSON.stringify(r.warnings));
});

test('shim: a fragment stage without highp is refused by webgl and webgl1, naming it', async () => {
  for (const backend of ['webgl', 'webgl1']) {
    const r = await initWith({ noHighp: true }, { backend });
    process.stderr.write(`[lowend no highp ${backend}] ${JSON.stringify(r)}\n`);
    assert.equal(r.ok, false, JSON.stringify(r));
    const why = `${r.message} ${JSON.stringify(r.tried)}`;
    assert.match(why, /no (32-bit )?highp float \(0 bits of precision\)/);
  }
});

test('shim: webgl1 on a half-float-only device stores half floats; with no float or half-float textures it is refused, naming both', async () => {
  const floats = ['OES_texture_float', 'WEBGL_color_buffer_float', 'EXT_color_buffer_float'];
  const r = await initWith({ hide: floats }, { backend: 'webgl1' });
  process.stderr.write(`[lowend half-only webgl1] ${JSON.stringify(r)}\n`);
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.format, 'RGBA16F');
  assert.ok(r.warnings.some((w) => /storing tensors in half floats/.test(w)), JSON.stringify(r.warnings));
  const none = await initWith({ hide: [...floats, 'OES_texture_half_float', 'EXT_color_buffer_half_float'] }, { backend: 'webgl1' });
  process.stderr.write(`[lowend no float textures webgl1] ${JSON.stringify(none)}\n`);
  assert.equal(none.ok, false, JSON.stringify(none));
  const why = `${none.message} ${JSON.stringify(none.tried)}`;
  assert.match(why, /OES_texture_float/);
  assert.match(why, /OES_texture_half_float/);
  // and the page goes on: the CPU still starts
  const cpu = await initWith({}, { backend: 'cpu' });
  assert.ok(cpu.ok, JSON.stringify(cpu));
});

test("emulatePrecision 'half': every value a shader writes is a half-precision number, on webgl and webgl1, and the measured arithmetic bits are 10; 'no-highp' is refused; the option is checked", async () => {
  const r = await inPage(async (pg) => {
    // true when v is exactly representable in IEEE half precision
    const isHalf = (v) => {
      const a = Math.abs(v);
      if (a === 0) return true;
      if (!(a <= 65504)) return false;
      if (a < 2 ** -14) return Number.isInteger(a * 2 ** 24);
      return (new Uint32Array(new Float32Array([v]).buffer)[0] & 0x1fff) === 0;
    };
    const d = pg.data.digits();
    const outputs = async (opts) => {
      const rt = await pg.init(opts);
      const model = pg.sequential([pg.layers.dense({ units: 16, inputShape: [64], activation: 'sigmoid' }), pg.layers.dense({ units: 10 })]);
      const x = pg.tensor(d.test.x.subarray(0, 64 * 32), [32, 64]);
      const out = Array.from(await model.predict(x).data());
      return { emulated: rt.report.emulatedPrecision ?? null, halves: out.filter(isHalf).length, n: out.length, bits: rt.report.caps.arithmeticMantissaBits };
    };
    const res = {};
    for (const backend of ['webgl', 'webgl1']) {
      res[backend] = { plain: await outputs({ backend }), half: await outputs({ backend, emulatePrecision: 'half' }) };
    }
    const refusal = async (opts) => {
      try {
        await pg.init(opts);
        return 'started';
      } catch (e) {
        return `${e.message} ${JSON.stringify(e.report && e.report.tried)}`;
      }
    };
    res.noHighp = await refusal({ backend: 'webgl', emulatePrecision: 'no-highp' });
    res.badValue = await refusal({ backend: 'webgl', emulatePrecision: 'quarter' });
    res.onCpu = await refusal({ backend: 'cpu', emulatePrecision: 'half' });
    return res;
  });
  process.stderr.write(`[lowend emulatePrecision] ${JSON.stringify(r)}\n`);
  for (const backend of ['webgl', 'webgl1']) {
    const { plain, half } = r[backend];
    assert.equal(half.emulated, 'half');
    assert.equal(plain.emulated, null);
    assert.equal(half.halves, half.n, `${backend}: every output is a half under emulation`);
    assert.ok(plain.halves < plain.n / 2, `${backend}: without emulation most outputs are not halves (${plain.halves} of ${plain.n})`);
    // The arithmetic bits the start-up probe measured: SwiftShader's highp keeps 23, the emulation 10.
    assert.deepEqual([plain.bits, half.bits], [23, 10], `${backend}: measured arithmetic bits`);
  }
  assert.match(r.noHighp, /highp/);
  assert.match(r.badValue, /unknown emulatePrecision 'quarter'/);
  assert.match(r.onCpu, /emulatePrecision emulates a WebGL device/);
});

test('shim: WebGL2 without EXT_color_buffer_float (RGBA16F storage) and webgl1 with half-float textures only train the digits MLP and a small CNN (Adam) to within a point of the CPU', async () => {
  const r = await inPage(async (pg, hide) => {
    await pg.loadWasm();
    const d = pg.data.digits();
    const nets = {
      mlp: {
        layers: () => [pg.layers.dense({ units: 64, inputShape: [64], activation: 'relu' }), pg.layers.dense({ units: 10 })],
        shape: [64],
      },
      cnn: {
        layers: () => [
          pg.layers.conv2d({ filters: 8, kernelSize: 3, padding: 'same', activation: 'relu', inputShape: [8, 8, 1] }),
          pg.layers.maxPooling2d({ poolSize: 2 }),
          pg.layers.flatten(),
          pg.layers.dense({ units: 10 }),
        ],
        shape: [8, 8, 1],
      },
    };
    const run = async (opts, hidden, net) => {
      window.pgShim.hide = hidden;
      try {
        const rt = await pg.init(opts);
        const { layers, shape } = nets[net];
        const x = pg.tensor(d.train.x, [d.train.n, ...shape]);
        const y = pg.tensor(d.train.y, [d.train.n]);
        const model = pg.sequential(layers(), { seed: 4 });
        model.compile({ optimizer: pg.optimizers.adam(3e-3), loss: 'softmaxCrossEntropy' });
        const h = await model.fit(x, y, { epochs: 2, batchSize: 32, shuffle: true, seed: 2 });
        const { accuracy } = await model.evaluate(pg.tensor(d.test.x, [d.test.n, ...shape]), pg.tensor(d.test.y, [d.test.n]));
        const losses = h.history.loss;
        return { backend: rt.backend, format: rt.report.format ?? null, accuracy, last: losses[losses.length - 1] };
      } finally {
        window.pgShim.hide = [];
      }
    };
    const out = {};
    for (const net of ['mlp', 'cnn']) {
      out[net] = { cpu: await run({ backend: 'cpu' }, [], net) };
      for (const backend of ['webgl', 'webgl1']) out[net][backend] = await run({ backend }, hide[backend], net);
    }
    return out;
  }, {
    // WebGL2 renders RGBA16F but not RGBA32F; WebGL1 has half-float textures but no float ones
    webgl: ['EXT_color_buffer_float'],
    webgl1: ['OES_texture_float', 'WEBGL_color_buffer_float', 'EXT_color_buffer_float'],
  });
  process.stderr.write(`[lowend half-storage training] ${JSON.stringify(r)}\n`);
  for (const net of ['mlp', 'cnn']) {
    const { cpu } = r[net];
    // the CPU really trained (the CNN reaches ~0.90 in these 2 epochs, the MLP ~0.92)
    assert.ok(cpu.accuracy > 0.85, `${net}: ${JSON.stringify(cpu)}`);
    for (const backend of ['webgl', 'webgl1']) {
      const half = r[net][backend];
      assert.equal(half.backend, backend, JSON.stringify(half));
      assert.equal(half.format, 'RGBA16F', JSON.stringify(half));
      assert.ok(Number.isFinite(half.last), `${net} ${backend}: ${JSON.stringify(half)}`);
      assert.ok(Math.abs(half.accuracy - cpu.accuracy) <= 0.01 + 1e-6, `${net} ${backend}: half storage ${half.accuracy} against the CPU's ${cpu.accuracy}`);
    }
  }
});
