//! The wasm-bindgen surface (wasm32 only). `web/js/index.js` wraps it into the public API; the
//! names here are internal to the package.
//!
//! Every exported call returns `Result<_, JsValue>` whose error is a JavaScript `Error` carrying
//! the engine's message (op, shapes, backend), so nothing panics across the boundary. Should a
//! bug panic anyway, [`crash`] tells the JS runtime, which discards this instance for a fresh one.

mod checkpoint;
mod crash;
mod data;
mod debug;
mod error;
mod fit;
mod flower;
mod image;
mod interop;
mod limits;
mod model;
mod onnx;
mod post;
mod precision;
mod runtime;
mod tensor;
mod threads;

pub use checkpoint::HostCheckpoint;
pub use crash::{set_panic_handler, test_panic, test_panic_async};
pub use data::{digits, parse_mnist, shuffled_indices};
pub use fit::FitRun;
pub use flower::{flower_join, flower_partition, FlowerNode};
pub use limits::CancelHandle;
pub use model::Model;
pub use onnx::{inspect_onnx, OnnxFiles, OnnxModel};
pub use runtime::Runtime;
pub use tensor::DeviceTensor;
pub use threads::{cpu_threads, cpu_worker_chunks, threaded_build, wasm_memory};
#[cfg(target_feature = "atomics")]
pub use threads::{cpu_worker_failed, cpu_worker_loop};

use wasm_bindgen::prelude::*;

pub(crate) use error::js_err;
pub use error::set_error_class;

/// Last-resort reporting: a panic (a bug; every user-input path returns an error) is logged to
/// the console with its message and location and handed to the JS runtime before the instance
/// traps; the runtime then replaces the instance ([`crash`]).
#[wasm_bindgen(start)]
pub fn start() {
    crash::install_hook();
}

/// The crate version (`pg.version`).
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
