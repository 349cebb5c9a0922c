// `pg.tokenizer` in Chromium (issue 41, item 5): the BPE, WordPiece and Unigram fixtures of
// crates/pixelgrad-text/fixtures (trained by make.py with the Python `tokenizers` package, which
// also wrote the expected encodings) encode and decode in the page as in Python; offsets come in
// UTF-16 units; bad input is a PixelgradError of kind 'invalid' naming the operation. The
// tokenizer is its own wasm module (pixelgrad_text_bg.wasm), loaded by the first `pg.tokenizer`
// without the main module, and a crash of it is survived on a fresh instance.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiPage } from './api-page.mjs';

const { inPage } = apiPage();
const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'crates', 'pixelgrad-text', 'fixtures');
const read = (f) => fs.readFileSync(path.join(fixtures, f), 'utf8');

/** Python's offsets count code points; the page's count UTF-16 units (what `slice` takes). */
function utf16Offsets(text, offsets) {
  const at = [0];
  for (const ch of text) at.push(at[at.length - 1] + ch.length);
  return offsets.map(([s, e]) => [at[s], at[e]]);
}

// First in this file: the page has loaded nothing yet.
test('pg.tokenizer loads the tokenizer module alone: no pg.init, the main module never fetched, the module fetched once', async () => {
  const r = await inPage(async (pg, json) => {
    const a = await pg.tokenizer(json);
    const b = await pg.tokenizer(JSON.parse(json));
    const names = performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname.split('/').pop());
    return { same: a.encode('the cat').ids.join() === b.encode('the cat').ids.join(), ids: a.encode('the cat').ids, names };
  }, read('wordpiece.json'));
  assert.equal(r.same, true);
  assert.ok(r.ids.length >= 2, `ids ${r.ids}`);
  assert.deepEqual(r.names.filter((n) => n.startsWith('pixelgrad_text_bg.wasm')), ['pixelgrad_text_bg.wasm'], `fetched: ${r.names}`);
  assert.deepEqual(r.names.filter((n) => n.startsWith('pixelgrad_web')), [], `the main module was fetched: ${r.names}`);
});

for (const name of ['bpe', 'wordpiece', 'unigram']) {
  test(`${name}: encode and decode in the page equal Python's tokenizers`, async () => {
    const expected = JSON.parse(read(`${name}.expected.json`));
    const got = await inPage(async (pg, { json, texts }) => {
      const tok = await pg.tokenizer(json);
      const out = {
        vocabSize: tok.vocabSize,
        cases: texts.map((text) => {
          const enc = tok.encode(text);
          return {
            ...enc,
            idsPlain: tok.encode(text, { addSpecialTokens: false }).ids,
            decoded: tok.decode(enc.ids),
            decodedWithSpecial: tok.decode(Uint32Array.from(enc.ids), { skipSpecialTokens: false }),
            slices: enc.offsets.map(([s, e]) => text.slice(s, e)),
          };
        }),
      };
      tok.dispose();
      return out;
    }, { json: read(`${name}.json`), texts: expected.cases.map((c) => c.text) });
    assert.equal(got.vocabSize, expected.vocab_size);
    assert.ok(expected.cases.length >= 16);
    expected.cases.forEach((want, i) => {
      const g = got.cases[i];
      const what = `${name}: ${JSON.stringify(want.text)}`;
      assert.deepEqual(g.ids, want.ids, what);
      assert.deepEqual(g.tokens, want.tokens, what);
      assert.deepEqual(g.offsets, utf16Offsets(want.text, want.offsets), what);
      assert.deepEqual(g.idsPlain, want.ids_plain, what);
      assert.equal(g.decoded, want.decoded, what);
      assert.equal(g.decodedWithSpecial, want.decoded_with_special, what);
      const chars = Array.from(want.text);
      assert.deepEqual(g.slices, want.offsets.map(([s, e]) => chars.slice(s, e).join('')), what);
    });
  });
}

test('bad input is a PixelgradError of kind invalid, and the tokenizer keeps working', async () => {
  const bpe = JSON.parse(read('bpe.json'));
  const r = await inPage(async (pg, bpe) => {
    const unknown = structuredClone(bpe);
    unknown.model.type = 'Sentencepiece2000';
    const tok = await pg.tokenizer(new TextEncoder().encode(JSON.stringify(bpe)));
    const n = tok.vocabSize;
    const cases = {
      malformed: () => pg.tokenizer('{"model": {"type": "BPE",'),
      notATokenizer: () => pg.tokenizer('{}'),
      unknownModel: () => pg.tokenizer(unknown),
      notJson: () => pg.tokenizer(42),
      badBytes: () => pg.tokenizer(new Uint8Array([0xff, 0xfe, 0x00])),
      badOptions: () => pg.tokenizer(bpe, 'fast'),
      outOfRange: () => tok.decode([1, 2, n]),
      negative: () => tok.decode([1, -1]),
      fraction: () => tok.decode([1.5]),
      notAnArray: () => tok.decode(7),
      textNotString: () => tok.encode(42),
      badOption: () => tok.encode('x', { addSpecialTokens: 'yes' }),
    };
    const out = {};
    for (const [k, f] of Object.entries(cases)) {
      try {
        await f();
        out[k] = null;
      } catch (e) {
        out[k] = { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message };
      }
    }
    out.after = tok.decode(tok.encode('hello world').ids);
    out.fromObject = (await pg.tokenizer(bpe)).encode('hello').ids.length > 0;
    out.rejects = pg.tokenizer(42).then(() => false, (e) => e instanceof pg.PixelgradError);
    out.rejects = await out.rejects;
    out.tokenToId = [tok.tokenToId('<|endoftext|>'), tok.tokenToId('no such token'), tok.idToToken(0)];
    tok.dispose();
    try {
      tok.encode('x');
      out.disposed = null;
    } catch (e) {
      out.disposed = { pg: e instanceof pg.PixelgradError, message: e.message };
    }
    return out;
  }, bpe);
  const ops = {
    malformed: 'tokenizer', notATokenizer: 'tokenizer', unknownModel: 'tokenizer', notJson: 'tokenizer', badBytes: 'tokenizer', badOptions: 'tokenizer',
    outOfRange: 'tokenizer.decode', negative: 'tokenizer.decode', fraction: 'tokenizer.decode', notAnArray: 'tokenizer.decode',
    textNotString: 'tokenizer.encode', badOption: 'tokenizer.encode',
  };
  for (const [k, op] of Object.entries(ops)) {
    assert.ok(r[k], `${k} did not throw`);
    assert.equal(r[k].pg, true, k);
    assert.equal(r[k].kind, 'invalid', k);
    assert.equal(r[k].op, op, `${k}: ${r[k].message}`);
  }
  assert.match(r.malformed.message, /not valid JSON \(line 1, column/);
  assert.match(r.unknownModel.message, /unknown model type "Sentencepiece2000"/);
  assert.match(r.outOfRange.message, /id 420 \(at index 2\) is not in the vocabulary of 420 tokens/);
  assert.equal(r.after, 'hello world');
  assert.equal(r.fromObject, true);
  assert.equal(r.rejects, true, 'an async call rejects (it does not throw synchronously)');
  assert.deepEqual(r.tokenToId, [0, undefined, '<|endoftext|>']);
  assert.equal(r.disposed.pg, true);
  assert.match(r.disposed.message, /disposed/);
});

test('a crash of the tokenizer module: kind panic, the tokenizer reloads itself on a fresh instance, no promise hangs, the main module is untouched', async () => {
  const r = await inPage(async (pg, json) => {
    const tm = await import('/pkg/textmodule.js'); // the package's own module record (internal)
    const tok = await pg.tokenizer(json);
    const before = tok.encode('The cat reads a letter.').ids;
    const crash = (message) => {
      const rec = tok._rec;
      try {
        tm.callText(rec, 'test', () => rec.ns.__testPanic(message));
        return null;
      } catch (e) {
        return { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, panicMessage: e.panicMessage, dead: !!rec.dead };
      }
    };
    const first = crash('tokenizer crash test');
    const deadRec = tok._rec;
    const after = tok.encode('The cat reads a letter.').ids; // synchronously on a fresh instance
    const fresh = tok._rec !== deadRec && !tok._rec.dead;
    const other = await pg.tokenizer(json); // a new tokenizer on the fresh instance
    // Crashes in a row, each followed at once by a synchronous call: once the glue copy
    // imported ahead is used up, that call throws kind 'instanceLost' (a fresh instance is not
    // ready yet), and pg.tokenizer waits for one and settles.
    let lost = null;
    for (let i = 0; i < 3 && !lost; i++) {
      crash(`crash ${i} in a row`);
      try {
        tok.encode('a letter');
      } catch (e) {
        lost = { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op };
      }
    }
    const settled = await Promise.race([
      pg.tokenizer(json).then((t) => t.decode(t.encode('a letter').ids)),
      new Promise((resolve) => setTimeout(() => resolve('pg.tokenizer did not settle in 20 s'), 20000)),
    ]);
    return {
      first,
      before,
      after,
      fresh,
      decoded: tok.decode(after),
      other: other.decode(other.encode('The cat').ids),
      lost,
      settled,
      lastTok: tok.decode(tok.encode('a letter').ids),
      mainLoaded: performance.getEntriesByType('resource').some((e) => /pixelgrad_web(_threads)?(_bg\.wasm|\.js)/.test(e.name)),
    };
  }, read('wordpiece.json'));
  assert.deepEqual(r.first, { pg: true, kind: 'panic', op: 'test', panicMessage: r.first.panicMessage, dead: true });
  assert.match(r.first.panicMessage, /^tokenizer crash test \(at /);
  assert.ok(r.before.length > 2);
  assert.deepEqual(r.after, r.before);
  assert.equal(r.fresh, true);
  assert.equal(r.decoded, 'the cat reads a letter.');
  assert.equal(r.other, 'the cat');
  assert.deepEqual(r.lost, { pg: true, kind: 'instanceLost', op: 'tokenizer.encode' });
  assert.equal(r.settled, 'a letter');
  assert.equal(r.lastTok, 'a letter');
  assert.equal(r.mainLoaded, false, 'the crash recovery of the tokenizer module must not load the main module');
});
