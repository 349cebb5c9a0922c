// `model.generate` in headless Chromium on webgpu, webgl and cpu: the decoders that
// crates/pixelgrad-onnx/tests/generate.rs builds (without a cache, with past_key_values, merged
// with use_cache_branch) give the native CPU's greedy and seeded tokens, with the cache on the
// device and without it; tokens stream to onToken; stop tokens, onToken returning false and an
// AbortSignal stop; a model that is not a decoder and a too-long maxTokens reject.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openPage } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const bundle = path.join(here, '..', 'test-artifacts', 'generate');

let page;
let close;
let expected;

before(async () => {
  fs.rmSync(bundle, { recursive: true, force: true });
  fs.mkdirSync(bundle, { recursive: true });
  execFileSync('cargo', ['test', '-q', '-p', 'pixelgrad-onnx', '--test', 'generate', 'writes_decoders_for_the_browser_test', '--', '--exact'], {
    cwd: repo,
    stdio: 'inherit',
    env: { ...process.env, PIXELGRAD_GENERATE_OUT: bundle },
  });
  expected = JSON.parse(fs.readFileSync(path.join(bundle, 'expected.json'), 'utf8'));
  ({ page, close } = await openPage('tests/pages/api.html', { ready: true }));
});

after(async () => {
  await close?.();
  fs.rmSync(bundle, { recursive: true, force: true });
});

function inPage(fn, arg) {
  return page.evaluate(([src, a]) => {
    // eslint-disable-next-line no-new-func
    const f = new Function('pg', 'arg', `return (${src})(pg, arg);`);
    return f(window.pg, a);
  }, [fn.toString(), arg]);
}

for (const backend of ['webgpu', 'webgl', 'cpu']) {
  test(`generate on ${backend}: cached tokens equal the recomputed ones and the native CPU's`, async () => {
    const r = await inPage(async (pg, { backend, expected }) => {
      await pg.init({ backend, allowSoftware: true });
      const out = {};
      for (const name of ['plain', 'past', 'merged']) {
        const m = await pg.loadOnnx(`/test-artifacts/generate/${name}.onnx`);
        const streamed = [];
        const cached = await m.generate(expected.prompt, { maxTokens: 12, onToken: (t) => { streamed.push(t); } });
        const full = await m.generate(expected.prompt, { maxTokens: 12, useCache: false });
        const sampled = await m.generate(expected.prompt, { maxTokens: 8, temperature: 1.2, topK: 20, topP: 0.95, seed: 7 });
        out[name] = { cached, full, streamed, sampled: sampled.tokens };
        m.dispose();
      }
      return out;
    }, { backend, expected });
    for (const name of ['plain', 'past', 'merged']) {
      const { cached, full, streamed, sampled } = r[name];
      assert.deepEqual(cached.tokens, full.tokens, `${name}: with the cache vs recomputing`);
      assert.deepEqual(cached.tokens, expected[name].greedy, `${name}: the native CPU's greedy tokens`);
      assert.deepEqual(streamed, cached.tokens, `${name}: onToken streams the tokens`);
      assert.deepEqual(sampled, expected[name].sampled, `${name}: the native CPU's seeded tokens`);
      assert.equal(cached.cached, name !== 'plain');
      assert.equal(cached.stopped, 'maxTokens');
      assert.equal(cached.steps, 12);
      assert.ok(cached.tokensPerSecond > 0 && cached.prefillMs >= 0, JSON.stringify(cached));
    }
    // every decoder has the same weights: the same tokens
    assert.deepEqual(r.past.cached.tokens, r.plain.cached.tokens);
    assert.deepEqual(r.merged.cached.tokens, r.plain.cached.tokens);
  });
}

test('generate stops on stop tokens, onToken false and an AbortSignal; bad models and options reject', async () => {
  const r = await inPage(async (pg, { expected }) => {
    await pg.init({ backend: 'webgl', allowSoftware: true });
    const m = await pg.loadOnnx('/test-artifacts/generate/past.onnx');
    const stop = expected.past.greedy[4];
    const stopped = await m.generate(expected.prompt, { maxTokens: 12, stop: [stop] });
    let n = 0;
    const byCallback = await m.generate(expected.prompt, { maxTokens: 12, onToken: () => ++n < 3 });
    const ac = new AbortController();
    let aborted;
    try {
      await m.generate(expected.prompt, { maxTokens: 12, signal: ac.signal, onToken: (t) => { if (t !== undefined) ac.abort(); } });
    } catch (e) {
      aborted = { kind: e.kind, message: e.message };
    }
    const err = async (f) => {
      try {
        await f();
        return null;
      } catch (e) {
        return { kind: e.kind, message: e.message };
      }
    };
    const tooLong = await err(() => m.generate(expected.prompt, { maxTokens: 4e9 }));
    const badOption = await err(() => m.generate(expected.prompt, { topP: 0 }));
    const badId = await err(() => m.generate([1, -2], {}));
    const outside = await err(() => m.generate([expected.vocab], {}));
    m.dispose();
    return { stop, stopped, byCallback, aborted, tooLong, badOption, badId, outside };
  }, { expected });
  const first = expected.past.greedy.indexOf(r.stop);
  assert.deepEqual(r.stopped.tokens, expected.past.greedy.slice(0, first));
  assert.equal(r.stopped.stopped, 'stop');
  assert.equal(r.stopped.stopToken, r.stop);
  assert.deepEqual(r.byCallback.tokens, expected.past.greedy.slice(0, 3));
  assert.equal(r.byCallback.stopped, 'onToken');
  assert.equal(r.aborted?.kind, 'cancelled', JSON.stringify(r.aborted));
  assert.equal(r.tooLong?.kind, 'budget', JSON.stringify(r.tooLong));
  assert.match(r.tooLong.message, /key\/value cache/);
  assert.match(r.badOption?.message ?? '', /top_p/);
  assert.match(r.badId?.message ?? '', /token ids/);
  assert.match(r.outside?.message ?? '', /outside the vocabulary/);
});
