// `pg.tokenizer(json)`: a Hugging Face tokenizer.json (WordPiece, BPE, Unigram) loaded into the
// wasm module (the Rust `tokenizers` crate through pixelgrad-text), encoding and decoding as the
// Python `tokenizers` package does on the same file. It needs the module but no backend:
//
//   await pg.loadWasm();
//   const tok = pg.tokenizer(await (await fetch('tokenizer.json')).text());
//   const { ids, tokens, offsets } = tok.encode('Hello world');
//   tok.decode(ids); // 'hello world' (a lowercasing WordPiece)
//
// Errors are PixelgradErrors of kind 'invalid' (op 'tokenizer', 'tokenizer.encode',
// 'tokenizer.decode'): malformed JSON, an unknown model type, an id that names no token.
import { currentInstance, isDeadObject, release, wasm, wasmLoaded } from './instance.js';
import { registry } from './tensor.js';

/** @typedef {import('./index.js').Tokenizer} DeclaredTokenizer index.d.ts's Tokenizer, which this class implements. */

/** @implements {DeclaredTokenizer} */
export class Tokenizer {
  /** @internal Use `pg.tokenizer`. */
  constructor(inner, json) {
    this._inner = inner;
    this._json = json; // kept to load it again on a fresh wasm instance after a crash
    this._disposed = false;
    if (registry) registry.register(this, inner, this);
  }

  /** The wasm object, made again from the JSON if the instance it lived on was discarded. */
  _live(what) {
    if (this._disposed) throw new Error(`${what}: the tokenizer was disposed`);
    if (isDeadObject(this._inner)) {
      if (registry) registry.unregister(this);
      release(this._inner);
      this._inner = wasm.TextTokenizer.fromJson(this._json);
      if (registry) registry.register(this, this._inner, this);
    }
    return this._inner;
  }

  /** Tokens in the vocabulary, added tokens included. */
  get vocabSize() {
    return this._live('tokenizer.vocabSize').vocabSize();
  }

  encode(text, options = {}) {
    if (typeof text !== 'string') throw new Error(`tokenizer.encode: text must be a string, not ${text === null ? 'null' : typeof text}`);
    const addSpecialTokens = flag(options, 'addSpecialTokens', true, 'tokenizer.encode');
    const r = this._live('tokenizer.encode').encode(text, addSpecialTokens);
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
    return this._live('tokenizer.decode').decode(numbers, skipSpecialTokens);
  }

  tokenToId(token) {
    if (typeof token !== 'string') throw new Error('tokenizer.tokenToId: token must be a string');
    return this._live('tokenizer.tokenToId').tokenToId(token);
  }

  idToToken(id) {
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff) throw new Error(`tokenizer.idToToken: ${id} is not a token id`);
    return this._live('tokenizer.idToToken').idToToken(id);
  }

  /** Frees the wasm memory (idempotent); later calls throw. */
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    if (registry) registry.unregister(this);
    release(this._inner);
    this._inner = null;
  }
}

function flag(options, name, dflt, what) {
  if (options === null || typeof options !== 'object') throw new Error(`${what}: options must be an object`);
  const v = options[name];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new Error(`${what}: ${name} must be true or false`);
  return v;
}

/**
 * A tokenizer from the text of a tokenizer.json (a string, its bytes as UTF-8, or the parsed
 * object). Needs the wasm module (`await pg.loadWasm()` or `pg.init()`), no backend.
 */
export function tokenizer(json) {
  if (!wasmLoaded() || !currentInstance()) throw new Error('tokenizer: call `await pg.init()` (or `await pg.loadWasm()`) first');
  let text;
  if (typeof json === 'string') text = json;
  else if (json instanceof Uint8Array || json instanceof ArrayBuffer) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(json);
    } catch {
      throw new Error('tokenizer: the bytes are not UTF-8 text');
    }
  }
  else if (json !== null && typeof json === 'object') text = JSON.stringify(json);
  else throw new Error('tokenizer: json must be the text of a tokenizer.json, its bytes or the parsed object');
  return new Tokenizer(wasm.TextTokenizer.fromJson(text), text);
}
