//! pixelgrad: train and run neural networks on WebGPU, WebGL2 or the CPU, natively and in the
//! browser. This facade re-exports the engine core and, by feature, the backends:
//!
//! - [`cpu`] (always): the f64 reference and the fast f32 CPU backend;
//! - `wgpu` (feature `webgpu`): WGSL compute kernels through wgpu;
//! - `webgl` (feature `webgl`): fragment programs on float textures through glow.
//!
//! Layers, losses, optimizers and the training loop are in [`nn`]; data loading in [`data`].

pub use pixelgrad_core::*;
pub use pixelgrad_cpu as cpu;
pub use pixelgrad_data as data;
pub use pixelgrad_nn as nn;
#[cfg(feature = "webgl")]
pub use pixelgrad_webgl as webgl;
#[cfg(feature = "webgpu")]
pub use pixelgrad_wgpu as wgpu;
