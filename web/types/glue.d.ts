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
