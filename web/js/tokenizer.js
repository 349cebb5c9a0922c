// `pg.tokenizer(json)`: a Hugging Face tokenizer.json (WordPiece, BPE, Unigram) loaded into the
// tokenizer's own wasm module (the Rust `tokenizers` crate through pixelgrad-text: a separate
// 2.7 MiB module, 0.9 MB gzipped, that textmodule.js fetches on the first call), encoding and
// decoding as the Python `tokenizers` package does on the same file. It needs neither
// `pg.init()` nor the main module:
//
//   const tok = await pg.tokenizer(await (await fetch('tokenizer.json')).text());
//   const { ids, tokens, offsets } = tok.encode('Hello world');
//   tok.decode(ids); // 'hello world' (a lowercasing WordPiece)
//
// Errors are PixelgradErrors of kind 'invalid' (op 'tokenizer', 'tokenizer.encode',
// 'tokenizer.decode'): malformed JSON, an unknown model type, an id that names no token. A crash
// of the text module is kind 'panic'; the tokenizer then loads itself again from its JSON on a
// fresh instance at its next call.
import { callText, freeText, liveText, textInstance, trackText } from './textmodule.js';

/** @typedef {import('./index.js').Tokenizer} DeclaredTokenizer index.d.ts's Tokenizer, which this class implements. */

/** @implements {DeclaredTokenizer} */
export class Tokenizer {
  /** @internal Use `pg.tokenizer`. */
  constructor(rec, inner, json) {
    this._rec = rec; // the text instance `_inner` lives on
    this._inner = inner;
    this._json = json; // kept to load it again on a fresh instance after a crash
    this._disposed = false;
  }

  /** `f(inner)` on the text instance, the tokenizer made again from its JSON if its instance died. */
  _run(what, f) {
    if (this._disposed) throw new Error(`${what}: the tokenizer was disposed`);
    if (this._rec.dead) {
      const rec = liveText(what);
      this._inner = load(rec, this._json, what);
      this._rec = rec;
    }
    const inner = this._inner;
    return callText(this._rec, what, () => f(inner));
  }

  /** Tokens in the vocabulary, added tokens included. */
  get vocabSize() {
    return this._run('tokenizer.vocabSize', (t) => t.vocabSize());
  }

  encode(text, options = {}) {
    if (typeof text !== 'string') throw new Error(`tokenizer.encode: text must be a string, not ${text === null ? 'null' : typeof text}`);
    const addSpecialTokens = flag(options, 'addSpecialTokens', true, 'tokenizer.encode');
    const r = this._run('tokenizer.encode', (t) => t.encode(text, addSpecialTokens));
    /** @type {[number, number][]} */
    const offsets = [];
    for (let i = 0; i < r.offsets.length; i += 2) offsets.push([r.offsets[i], r.offsets[i + 1]]);
    return { ids: Array.from(r.ids), tokens: r.tokens, offsets };
  }

  decode(ids, options = {}) {
    if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number') {
      throw new Error('tokenizer.decode: ids must be an array (or typed array) of token ids');
    }
    const skipSpecialTokens = flag(options, 'skipSpecialTokens', true, 'tokenizer.decode');
    // Numbers as they are (a fraction or a negative is refused in Rust, not truncated).
    const numbers = Float64Array.from(Array.from(ids, (v) => (typeof v === 'number' ? v : NaN)));
    return this._run('tokenizer.decode', (t) => t.decode(numbers, skipSpecialTokens));
  }

  tokenToId(token) {
    if (typeof token !== 'string') throw new Error('tokenizer.tokenToId: token must be a string');
    return this._run('tokenizer.tokenToId', (t) => t.tokenToId(token));
  }

  idToToken(id) {
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new Error(`tokenizer.idToToken: ${id} is not a token id`);
    return this._run('tokenizer.idToToken', (t) => t.idToToken(id));
  }

  /** Frees the wasm memory (idempotent); later calls throw. */
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    const inner = this._inner;
    this._inner = null;
    freeText(this._rec, inner, 'tokenizer.dispose');
  }
}

function flag(options, name, dflt, what) {
  if (options === null || typeof options !== 'object') throw new Error(`${what}: options must be an object`);
  const v = options[name];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new Error(`${what}: ${name} must be true or false`);
  return v;
}

/** A TextTokenizer of `json` on text instance `rec`. */
function load(rec, json, what) {
  const t = callText(rec, what, () => rec.ns.TextTokenizer.fromJson(json));
  trackText(rec, t);
  return t;
}

/** The text of a tokenizer.json given as text, UTF-8 bytes or the parsed object. */
function jsonText(json) {
  if (typeof json === 'string') return json;
  if (json instanceof Uint8Array || json instanceof ArrayBuffer) {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(json);
    } catch {
      throw new Error('tokenizer: the bytes are not UTF-8 text');
    }
  }
  if (json !== null && typeof json === 'object') return JSON.stringify(json);
  throw new Error('tokenizer: json must be the text of a tokenizer.json, its bytes or the parsed object');
}

/**
 * A tokenizer from the text of a tokenizer.json (a string, its bytes as UTF-8, or the parsed
 * object). The first call loads the tokenizer's wasm module (`options.wasmUrl`: where it is, or
 * its bytes; by default `pixelgrad_text_bg.wasm` next to this file); no `pg.init()` needed.
 * @param {string | Uint8Array | ArrayBuffer | object} json
 * @param {import('./index.js').TokenizerOptions} [options]
 */
export async function tokenizer(json, options = {}) {
  const text = jsonText(json);
  if (options === null || typeof options !== 'object') throw new Error('tokenizer: options must be an object');
  const rec = await textInstance({ wasmUrl: options.wasmUrl });
  return new Tokenizer(rec, load(rec, text, 'tokenizer'), text);
}
