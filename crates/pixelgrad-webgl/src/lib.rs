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
//! The design (texture layout, passes, ping-pong, precision) is the book's chapter
//! `docs/src/design/webgl.md`.
//!
//! # Narrow storage: 8-bit and f16 (WebGL2)
//!
//! [`Caps::int8`](pixelgrad_core::Caps::int8) and
//! [`Caps::f16_storage`](pixelgrad_core::Caps::f16_storage) are true
//! on WebGL2 contexts. `Tensor::from_i8` / `from_u8` keep one byte per element in `RGBA8I` /
//! `RGBA8UI` textures and `Tensor::from_f16` two, the IEEE half bit patterns in `RGBA16UI`
//! textures, in the same layout as f32 tensors (4 elements per texel), uploaded bit for bit.
//! [`Op::Widen`](pixelgrad_core::Op::Widen) is a fragment pass that reads them with integer
//! `texelFetch` and writes f32, decoding halves with integer operations (exact for every bit
//! pattern, subnormals included, whatever the driver does with half-float sampling);
//! [`Op::MatMulI8`](pixelgrad_core::Op::MatMulI8) multiplies 8-bit weights by whole-number f32
//! activations with `highp int` products and sums (wrapping like `i32`). Both are
//! bit-identical to the CPU backend, and reading a narrow tensor back widens it first. Every
//! other op given a narrow input is a typed `Error::Shape`.
//!
//! [`Op::NarrowF16`](pixelgrad_core::Op::NarrowF16) goes the other way: one pass renders the
//! f16 bits of an f32 tensor into an `RGBA16UI` target, computed from the f32 bits with
//! integer operations and bit-identical to `half::f16::from_f32`. That makes
//! [`Caps::narrow_f16`](pixelgrad_core::Caps::narrow_f16) true on
//! WebGL2 contexts with `RGBA32F` tensors, so mixed-precision training keeps its saved
//! activations in f16. The capability is false under the `RGBA16F` fallback, where f32
//! tensors already hold halves in as many bytes; a direct call there is a typed error.
//!
//! [`Op::Narrow8`](pixelgrad_core::Op::Narrow8) renders f32 whole numbers into `RGBA8I` /
//! `RGBA8UI` (rounded half to even and saturated): the storage of quantised activations.
//!
//! The [`webgl1`](WebGlOptions::webgl1) mode has no integer textures: it keeps 8-bit tensors
//! in byte textures (`RGBA` / `UNSIGNED_BYTE`) and only widens them
//! ([`Caps::int8_storage`](pixelgrad_core::Caps::int8_storage) true,
//! `caps.int8` false: `matmul_i8` and `narrow8` fail naming the missing feature). The f16
//! capabilities are false, `from_f16` makes f32 tensors of the same values (the documented
//! fallback), mixed precision trains f32, and `upload_f16` / `Op::NarrowF16` called directly
//! fail naming the missing feature.
//!
//! # WebGL1
//!
//! [`WebGlOptions::webgl1`] selects the `webgl1` mode: the same ops as GLSL ES 1.00 programs
//! under WebGL1's rules (no texelFetch or integer bit operations, constant loop bounds, one
//! render target, no VAOs), for WebGL1 contexts with OES_texture_float (or only half-float
//! render targets, then tensors are half-float textures); [`gl1`] documents the
//! rules and where each is kept. It stores no 8-bit or f16 tensors (see above).
//!
//! # Counters and the steady state
//!
//! [`Backend::counters`](pixelgrad_core::Backend::counters) reports, cumulatively:
//! - `allocations`: textures created (pool hits and plan reuse are not counted; a dropped
//!   tensor's texture returns to the pool, or to its step plan, at once: GL orders the draws
//!   that still read it);
//! - `compiles`: GLSL programs linked (cache misses of the per-op-kind program cache);
//! - `launches`: draws (one per op pass, plus the folds of queued index checks);
//! - `submissions`: `glFlush` calls made by `Backend::flush` and `end_step` (and by
//!   `begin_step` when eager work is queued, so a replayed step is one submission);
//! - `readbacks`: `readPixels` of tensors (and of folded check flags);
//! - `bytes_in_use`: bytes of every texture the backend holds (tensors, pool, step plans);
//! - `pooled_bytes`: the part of it in the pool (free textures kept for reuse, at most
//!   [`WebGlOptions::pool_budget`]; `Backend::trim` deletes them);
//! - `bindings`: framebuffer attachments made for draws: every draw outside a step attaches
//!   its target to the shared framebuffer; inside a step only draws whose planned target
//!   changed do;
//! - `replayed`: draws served from a step plan (same target, program and uniforms as
//!   recorded).
//!
//! # Grouped draws
//!
//! When pending elementwise results are drawn at the end of a step or a flush, those whose
//! output textures have one size are drawn together, one draw with several render targets
//! (`src/group.rs`; e.g. Adam's `m`, `v` and parameter update of each parameter), with the
//! same per-output code as single draws, so results are bit-identical.
//! [`WebGlOptions::group`] turns it off; the `webgl1` mode never groups.
//!
//! # Step plans
//!
//! Inside [`Device::step`](pixelgrad_core::Device::step) (`Backend::begin_step` /
//! `end_step`) the backend records a plan per key and parity: every texture the step
//! allocates and every draw's framebuffer (target attached once), program and uniform slots.
//! Even and odd steps use two plans, so parameters and optimizer state ping-pong between two
//! sets of textures. Later steps replay: each allocation reuses its planned texture unless a
//! live tensor still holds it, each draw binds its prepared framebuffer, and redundant GL
//! state and uniform calls are skipped (each is a JavaScript call in the browser). A call
//! that does not match the plan runs as outside a step and updates the plan, so replay never
//! changes a result. `src/plan.rs` documents the rules; `tests/steady_state.rs` shows a
//! training step reaching a replayed steady state from its fourth step (no allocations,
//! compiles, framebuffer attachments or reads; every draw replayed) and `tests/plan.rs` that
//! results stay bit-identical to eager steps.
//!
//! Without steps, a training step with fixed shapes reaches a steady state after two steps:
//! no allocations, no compiles, and the same number of draws every step, each attaching the
//! shared framebuffer. `flush` folds the step's index checks (gather / scatter_add validity
//! flags) into the one still queued, so the queue does not grow while nothing is read.

mod backend;
mod bytes;
mod caps;
mod checks;
mod context;
mod device;
pub mod dialect;
#[cfg(not(target_arch = "wasm32"))]
mod egl;
mod emulation;
mod features;
mod fusion;
pub mod gl1;
pub mod glsl;
mod group;
mod heatmap;
mod image;
mod interop;
mod launch;
mod legacy;
mod ops;
mod options;
mod plan;
mod pool;
mod program;
mod readback;
mod replay;
mod selftest;
mod submit;
mod texture;
mod trace;

pub use backend::WebGlBackend;
#[cfg(not(target_arch = "wasm32"))]
pub use heatmap::save_png;
pub use image::PixelTexture;
pub use options::{
    EmulatedPrecision, HeatmapOptions, MatMulKernel, PrecisionFormat, RgbaImage, SelfTest, TexelFormat, WebGlOptions, WebGlReport,
    DEFAULT_POOL_BUDGET,
};
pub use texture::{grid_texels, layout, GlTensor};

/// Re-exported so callers can build a context (`glow::Context::from_webgl2_context`) for
/// [`WebGlBackend::from_glow`] without depending on the same glow version themselves.
pub use glow;
