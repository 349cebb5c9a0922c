// `pg.tokenizer` in Chromium (issue 41, item 5): the BPE, WordPiece and Unigram fixtures of
// crates/pixelgrad-text/fixtures (trained by make.py with the Python `tokenizers` package, which
// also wrote the expected encodings) encode and decode in the page as in Python; offsets come in
// UTF-16 units; bad input is a PixelgradError of kind 'invalid' naming the operation.
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

for (const name of ['bpe', 'wordpiece', 'unigram']) {
  test(`${name}: encode and decode in the page equal Python's tokenizers`, async () => {
    const expected = JSON.parse(read(`${name}.expected.json`));
    const got = await inPage(async (pg, { json, texts }) => {
      await pg.loadWasm();
      const tok = pg.tokenizer(json);
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
    await pg.loadWasm();
    const unknown = structuredClone(bpe);
    unknown.model.type = 'Sentencepiece2000';
    const tok = pg.tokenizer(new TextEncoder().encode(JSON.stringify(bpe)));
    const n = tok.vocabSize;
    const cases = {
      malformed: () => pg.tokenizer('{"model": {"type": "BPE",'),
      notATokenizer: () => pg.tokenizer('{}'),
      unknownModel: () => pg.tokenizer(unknown),
      notJson: () => pg.tokenizer(42),
      badBytes: () => pg.tokenizer(new Uint8Array([0xff, 0xfe, 0x00])),
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
        f();
        out[k] = null;
      } catch (e) {
        out[k] = { pg: e instanceof pg.PixelgradError, kind: e.kind, op: e.op, message: e.message };
      }
    }
    out.after = tok.decode(tok.encode('hello world').ids);
    out.fromObject = pg.tokenizer(bpe).encode('hello').ids.length > 0;
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
    malformed: 'tokenizer', notATokenizer: 'tokenizer', unknownModel: 'tokenizer', notJson: 'tokenizer', badBytes: 'tokenizer',
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
  assert.deepEqual(r.tokenToId, [0, undefined, '<|endoftext|>']);
  assert.equal(r.disposed.pg, true);
  assert.match(r.disposed.message, /disposed/);
});

test('a tokenizer outlives a crash of the wasm instance: it is loaded again on the fresh one', async () => {
  const r = await inPage(async (pg, json) => {
    await pg.loadWasm();
    const tok = pg.tokenizer(json);
    const before = tok.encode('The cat reads a letter.').ids;
    const inner = tok._inner; // the wasm object (internal), on the instance about to crash
    let kind = null;
    try {
      pg.__testPanic('tokenizer crash test');
    } catch (e) {
      kind = e.kind;
    }
    await pg.loadWasm(); // waits for the fresh instance
    const after = tok.encode('The cat reads a letter.').ids;
    // a trapped instance may still answer, but nothing may call into it again: the tokenizer
    // must be a new object on the fresh instance
    return { kind, before, after, decoded: tok.decode(after), reloaded: tok._inner !== inner };
  }, read('wordpiece.json'));
  assert.equal(r.kind, 'panic');
  assert.ok(r.before.length > 2);
  assert.deepEqual(r.after, r.before);
  assert.equal(r.decoded, 'the cat reads a letter.');
  assert.equal(r.reloaded, true);
});
