//! The wasm-bindgen surface (wasm32 only). `web/js/index.js` wraps it into the public API; the
//! names here are internal to the package.
//!
//! Every exported call returns `Result<_, JsValue>` whose error is a JavaScript `Error` carrying
//! the engine's message (op, shapes, backend), so nothing panics across the boundary.

mod checkpoint;
mod data;
mod debug;
mod error;
mod flower;
mod image;
mod model;
mod onnx;
mod post;
mod precision;
mod runtime;
mod tensor;

pub use checkpoint::{auto_checkpoint_every_js, HostCheckpoint};
pub use data::{digits, parse_mnist, shuffled_indices};
pub use flower::{flower_join, flower_partition, FlowerNode};
pub use model::Model;
pub use onnx::OnnxModel;
pub use runtime::Runtime;
pub use tensor::DeviceTensor;

use wasm_bindgen::prelude::*;

pub(crate) use error::js_err;
pub use error::set_error_class;

/// Last-resort reporting: a panic (a bug; every user-input path returns an error) is logged to
/// the console with its message and location before wasm aborts.
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("pixelgrad: internal error (please report): {info}").into());
    }));
}

/// The crate version (`pg.version`).
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
