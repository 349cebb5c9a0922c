//! The wasm-bindgen surface of `pg.tokenizer`, built as its own small wasm module
//! (`web/pkg/pixelgrad_text_bg.wasm`, `cargo xtask build-wasm`) that `web/js/textmodule.js`
//! loads on a page's first `pg.tokenizer` call. The `tokenizers` crate lives here and not in
//! `pixelgrad-web`, whose module must stay under the 8 MiB that Chrome lets a page instantiate
//! synchronously on its main thread (the main module's crash recovery does so).
//!
//! Every exported call returns `Result<_, JsValue>` whose error is a `PixelgradError` of kind
//! `invalid` carrying pixelgrad-text's message (`error.rs`); a panic (a bug) is reported to the
//! handler JavaScript registered before the instance traps (`crash.rs`), and the JS side then
//! replaces this instance with a fresh one.
//!
//! Natively the crate is empty: the bindings exist only in the wasm build.

#[cfg(target_arch = "wasm32")]
mod crash;
#[cfg(target_arch = "wasm32")]
mod error;
#[cfg(target_arch = "wasm32")]
mod tokenizer;

#[cfg(target_arch = "wasm32")]
pub use crash::{set_panic_handler, test_panic};
#[cfg(target_arch = "wasm32")]
pub use error::set_error_class;
#[cfg(target_arch = "wasm32")]
pub use tokenizer::TextTokenizer;

/// Installs the panic hook when the module is instantiated.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    crash::install_hook();
}
