//! pixelgrad-core: tensors, the primitive op set, the [`Backend`] trait, reverse-mode autodiff
//! and the composite ops built from primitives.
//!
//! ```
//! # fn main() -> pixelgrad_core::Result<()> { Ok(()) }
//! ```

pub mod autodiff;
pub mod backend;
pub mod budget;
pub mod composite;
pub mod error;
mod few;
pub mod image;
pub mod kernel;
pub mod layout;
pub mod mixed;
pub mod op;
pub mod param;
pub mod plan;
pub mod quant;
pub mod rng;
pub mod shape;
pub mod tensor;

pub use backend::{is_software_renderer, Backend, BackendKind, Counters, LocalFuture, Storage, Trace, WeakStorage, SELF_TEST_TOL};
pub use budget::{CancelToken, Limits, RunLimits, RunScope};
pub use error::{Error, Result};
pub use layout::StorageLayout;
pub use mixed::{mixed_precision, mixed_precision_available, mixed_precision_enabled, MixedPrecisionGuard};
pub use op::{check_execute, BinaryOp, Distribution, Op, ReduceOp, UnaryOp, Window};
pub use param::Param;
pub use shape::{Shape, MAX_RANK};
pub use tensor::{grad_enabled, no_grad, Device, NoGradGuard, Tensor};

/// The `half` crate, whose [`half::f16`] [`Tensor::from_f16`] takes (the same version as
/// pixelgrad's, so callers need not depend on it themselves).
pub use half;
