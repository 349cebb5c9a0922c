//! pixelgrad-webgl: the WebGL2 backend, "training as rendering".
//!
//! Every tensor is an RGBA float texture holding 4 consecutive elements per texel, laid out
//! near-square under MAX_TEXTURE_SIZE. Every primitive op is a GLSL ES 3.00 fragment program
//! drawing a full-screen triangle into a framebuffer whose colour attachment is the output
//! texture; each fragment computes its 4 output elements and reads inputs with `texelFetch`.
//! Shapes and strides are uniforms, so programs are compiled once per op kind and small
//! configuration. The same code runs in browsers (WebGL2 through `glow`'s web-sys context) and
//! natively on any OpenGL ES 3 driver (headless EGL, e.g. Mesa llvmpipe).
//!
//! ```no_run
//! # fn main() -> pixelgrad_core::Result<()> {
//! use pixelgrad_core::{Device, Tensor};
//! use pixelgrad_webgl::{WebGlBackend, WebGlOptions};
//! let backend = WebGlBackend::new_headless(WebGlOptions::default())?;
//! println!("{:#?}", backend.report());
//! let dev = Device::new(backend);
//! let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2])?;
//! println!("{:?}", x.matmul(&x)?.to_vec()?);
//! # Ok(()) }
//! ```
//!
//! See the crate README for the design (texture layout, passes, ping-pong, precision).

mod backend;
mod caps;
mod checks;
mod context;
pub mod dialect;
#[cfg(not(target_arch = "wasm32"))]
mod egl;
mod heatmap;
mod launch;
mod ops;
mod options;
mod program;
mod readback;
mod selftest;
mod texture;

pub use backend::WebGlBackend;
#[cfg(not(target_arch = "wasm32"))]
pub use heatmap::save_png;
pub use options::{HeatmapOptions, PrecisionFormat, RgbaImage, SelfTest, TexelFormat, WebGlOptions, WebGlReport};
pub use texture::{layout, GlTensor};

/// Re-exported so callers can build a context (`glow::Context::from_webgl2_context`) for
/// [`WebGlBackend::from_glow`] without depending on the same glow version themselves.
pub use glow;
