//! pixelgrad-web: the Rust half of the `pixelgrad` npm package.
//!
//! The JavaScript API (`web/js/index.js`, built into `web/pkg/` by `cargo xtask build-wasm`)
//! is a thin, hand-written ES module over the bindings in `wasm` (wasm32 only). Everything that does not
//! touch JavaScript lives in plain modules so it compiles and is tested natively on the CPU
//! backend:
//!
//! - [`spec`]: layer configs (the JSON that `pg.layers.*` produce) → a [`pixelgrad::nn::Sequential`],
//!   with shape inference, NHWC input handling and the summary table;
//! - [`net`]: a compiled model and its training state (optimizer, device-side loss/accuracy sums
//!   read back only when the caller asks, so training never blocks on the GPU);
//! - [`weights`]: a layer's weights as a colour image (normalised and colour-mapped on the device);
//! - [`save`]: safetensors serialisation from host copies (reads are async in the browser);
//! - [`flower`]: the model as a node of a Flower federation (`pg.flower.join`);
//! - [`pixels`]: `pg.fromPixels` options → a `PixelSpec`, and the geometry returned with the tensor.
//! - [`yuv`]: `pg.fromYUV`, raw I420 / NV12 planes → a model input on the device.

pub mod debug;
pub mod flower;
pub mod net;
pub mod pixels;
pub mod save;
pub mod spec;
pub mod weights;
pub mod yuv;

#[cfg(target_arch = "wasm32")]
pub mod wasm;
