//! Kernels from one definition.
//!
//! Every elementwise function of pixelgrad is written once, as a small typed expression
//! ([`ir`]): [`defs`] holds the table (each [`crate::UnaryOp`], [`crate::BinaryOp`] and
//! `where`). From there:
//!
//! - [`eval`] says what the expression means on one element, with IEEE semantics for every
//!   function, in `f32` or `f64`; the CPU backend's block evaluator (in `pixelgrad-cpu`) runs
//!   it over blocks of elements, in `f32` and in `f64` for the reference;
//! - the GPU backends [`lower`](mod@lower) it — every IEEE function becomes device built-ins guarded by
//!   explicit selects, so NaN, infinities, signed zeros and overflow come out the same as on
//!   the CPU — and [`render`] it through their [`render::Dialect`] (WGSL for WebGPU, GLSL ES
//!   3.00 for WebGL2). A dialect is a table of primitives; nothing else knows shader syntax;
//! - chains of elementwise ops [`fuse`] into one kernel on the GPU backends: an op's result
//!   stays pending until something needs it, and the next elementwise op composes with it.
//!
//! Kernels that read at computed positions (the window family) are [`program`]s: indexed
//! loads, bounded loops and accumulators, defined once in [`windows`], [`columns`],
//! [`convolutions`], (gathers and scatters) [`indexing`] and (the matrix product) [`products`], listed in [`programs`], evaluated on the CPU ([`program_eval`]) and
//! rendered per shading language ([`program_render`]).
//!
//! ```
//! use pixelgrad_core::kernel::{eval, ir::{Builder, DType}};
//!
//! # fn main() -> pixelgrad_core::Result<()> {
//! // softplus(x) = log(1 + exp(x)), as a kernel of one input.
//! let b = Builder::new(&[DType::F32], 0);
//! let x = b.input(0);
//! let k = b.finish((x.exp() + 1.0).log())?;
//! let y: f32 = eval::eval_one(&k, &[0.0], &[])?;
//! assert!((y - std::f32::consts::LN_2).abs() < 1e-7);
//! # Ok(()) }
//! ```

pub mod columns;
pub mod convolutions;
pub mod defs;
pub mod eval;
pub mod fuse;
pub mod indexing;
pub mod ir;
pub mod lower;
pub mod products;
pub mod program;
pub mod program_eval;
pub mod program_render;
pub mod programs;
pub mod reductions;
pub mod render;
pub mod windows;

pub use defs::Launch;
pub use ir::{Builder, DType, Kernel};
pub use lower::lower;

#[cfg(test)]
mod program_tests;
#[cfg(test)]
mod reduction_tests;
#[cfg(test)]
mod tests;
