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

test('shim: webgl1 on a half-float-only device (no OES_texture_float) is refused, naming it', async () => {
  const r = await initWith({ hide: ['OES_texture_float', 'WEBGL_color_buffer_float', 'EXT_color_buffer_float'] }, { backend: 'webgl1' });
  process.stderr.write(`[lowend half-only webgl1] ${JSON.stringify(r)}\n`);
  assert.equal(r.ok, false, JSON.stringify(r));
  assert.match(`${r.message} ${JSON.stringify(r.tried)}`, /OES_texture_float/);
  // and the page goes on: the CPU still starts
  const cpu = await initWith({}, { backend: 'cpu' });
  assert.ok(cpu.ok, JSON.stringify(cpu));
});
