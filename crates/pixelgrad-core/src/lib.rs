//! pixelgrad-core: tensors, the primitive op set, the [`Backend`] trait, reverse-mode autodiff
//! and the composite ops built from primitives. Most users want the `pixelgrad` crate, which
//! re-exports this one with the backends, layers and data loading.
//!
//! ```
//! use pixelgrad_core::{Device, Tensor};
//! # fn main() -> pixelgrad_core::Result<()> {
//! let dev = Device::new(pixelgrad_cpu::CpuBackend::new()); // any Backend
//! let w = Tensor::from_vec(&dev, &[0.5, -1.0], [2, 1])?.with_grad();
//! let x = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2])?;
//! let loss = x.matmul(&w)?.square()?.mean_all()?; // mean of (-1.5)² and (-2.5)²
//! assert_eq!(loss.item()?, 4.25);
//! loss.backward()?;
//! assert_eq!(w.grad().unwrap().dims(), &[2, 1]);
//! # Ok(()) }
//! ```

pub mod autodiff;
pub mod backend;
pub mod budget;
pub mod caps;
pub mod composite;
mod dtype;
pub mod error;
mod few;
pub mod fusion;
pub mod kernel;
pub mod layout;
pub mod mixed;
pub mod op;
pub mod param;
pub mod plan;
pub mod quant;
pub mod recording;
pub mod rng;
pub mod shape;
pub mod tensor;
mod window_program;

pub use backend::{is_software_renderer, Backend, BackendKind, Counters, LocalFuture, Storage, WeakStorage, SELF_TEST_TOL};
pub use budget::{CancelToken, Limits, RunLimits, RunScope};
pub use caps::{Arithmetic, Caps, Training};
pub use error::{Error, Result};
pub use layout::StorageLayout;
pub use mixed::{mixed_precision, mixed_precision_available, mixed_precision_enabled, MixedPrecisionGuard};
pub use op::{check_execute, AttentionOpts, BinaryOp, Distribution, NBits, Op, ReduceOp, UnaryOp, Window};
pub use param::Param;
pub use recording::Trace;
pub use shape::{Shape, MAX_RANK};
pub use tensor::{grad_enabled, no_grad, Device, NoGradGuard, Tensor};

/// The `half` crate, whose [`half::f16`] [`Tensor::from_f16`] takes (the same version as
/// pixelgrad's, so callers need not depend on it themselves).
pub use half;
