// The wasm-bindgen glue `pixelgrad_web.js`: `cargo xtask build-wasm` generates it (with its own
// declarations, pixelgrad_web.d.ts) into web/pkg/, so the source tree has no copy. The package
// code uses it as a namespace of engine calls; this is the part it relies on by name.
declare module '*/pixelgrad_web.js' {
  /** Instantiates the module (wasm-bindgen's `--target web` initialiser). */
  export default function init(options?: { module_or_path?: WebAssembly.Module | string | URL | Response }): Promise<unknown>;
  export function setErrorClass(proto: object): void;
  export function setPanicHandler(handler: (message: string) => void): void;
}
// The threaded build's glue (`cargo xtask build-wasm --threads`), the same calls and the workers' ones.
declare module '*/pixelgrad_web_threads.js' {
  export default function init(options?: { module_or_path?: WebAssembly.Module | string | URL | Response; memory?: WebAssembly.Memory }): Promise<unknown>;
  export function setErrorClass(proto: object): void;
  export function setPanicHandler(handler: (message: string) => void): void;
}
// The tokenizer's own module (crates/pixelgrad-text-web), loaded by js/textmodule.js on the
// first `pg.tokenizer`.
declare module '*/pixelgrad_text.js' {
  export default function init(options?: { module_or_path?: WebAssembly.Module | string | URL | Response }): Promise<unknown>;
  export function initSync(options: { module: WebAssembly.Module }): unknown;
  export function setErrorClass(proto: object): void;
  export function setPanicHandler(handler: (message: string) => void): void;
  export function __testPanic(message: string): void;
  /** A loaded tokenizer.json (web/js/tokenizer.js wraps it). */
  export class TextTokenizer {
    static fromJson(json: string): TextTokenizer;
    encode(text: string, addSpecial: boolean): { ids: Uint32Array; tokens: string[]; offsets: Uint32Array };
    decode(ids: Float64Array, skipSpecial: boolean): string;
    vocabSize(): number;
    tokenToId(token: string): number | undefined;
    idToToken(id: number): string | undefined;
    free(): void;
  }
}
