//! pixelgrad-nn: layers, losses, optimizers, learning-rate schedules, the training loop and
//! safetensors save/load. Everything here is built from `pixelgrad-core` tensor ops, so it runs
//! unchanged on every backend.
//!
//! ```
//! use pixelgrad_core::{Device, Tensor};
//! use pixelgrad_nn::{layers::*, Module, Mode, Sequential, Init};
//! # fn main() -> pixelgrad_core::Result<()> {
//! let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
//! let mut init = Init::new(42);
//! let model = Sequential::new()
//!     .push(Linear::new(&dev, 4, 8, &mut init)?)
//!     .push(Activation::Relu)
//!     .push(Linear::new(&dev, 8, 2, &mut init)?);
//! let x = Tensor::ones(&dev, [3, 4])?;
//! let y = model.forward(&x, Mode::Eval)?;
//! assert_eq!(y.dims(), &[3, 2]);
//! # Ok(()) }
//! ```

pub mod checkpoint;
pub mod config;
pub mod crosscheck;
pub mod init;
pub mod io;
pub mod layers;
pub mod layouts;
pub mod loss;
pub mod mixed;
pub mod module;
pub mod optim;
pub mod pacing;
pub mod presets;
pub mod resume;
mod step_key;
pub mod sums;
pub mod train;

pub use config::{LayerConfig, ModelConfig};
pub use init::Init;
pub use loss::Loss;
pub use mixed::{LossScaler, MixedReport, Precision, ScaleOptions};
pub use module::{Buffer, Mode, Module, Sequential};
pub use optim::{Optimizer, OptimizerKind, OptimizerState, Schedule};
pub use step_key::step_key;
