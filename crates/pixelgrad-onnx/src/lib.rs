//! pixelgrad-onnx: ONNX models in and out of pixelgrad.
//!
//! - [`Model`] decodes an `.onnx` file (protobuf messages of our own in [`proto`]), checks it,
//!   folds constant subgraphs and shape arithmetic on the host, and folds
//!   `BatchNormalization` into the `Conv` before it.
//! - [`Session`] binds a model to any `pixelgrad_core::Device` (CPU, WebGPU, WebGL) and runs
//!   it with inputs and outputs by name. Every operator is built from pixelgrad's tensor ops,
//!   so it runs on every backend and is differentiable: [`OnnxLayer`] puts an imported graph
//!   (or its part up to a named value) into a `Sequential`, frozen or trainable.
//! - [`export`] writes pixelgrad models back as ONNX.
//! - [`generate`] runs a decoder in Hugging Face's layout token by token
//!   ([`Session::generate`]), its key/value cache kept on the device.
//!
//! ```no_run
//! use pixelgrad_core::{Device, Tensor};
//! use pixelgrad_onnx::{Model, Session};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
//! let session = Session::new(Model::load("model.onnx")?, &dev)?;
//! let x = Tensor::zeros(&dev, [1, 3, 224, 224])?;
//! for (name, value) in session.run(&[("input", x.into())])? {
//!     println!("{name}: {:?}", value.dims());
//! }
//! # Ok(()) }
//! ```

pub mod error;
pub mod export;
pub mod external;
pub mod generate;
pub mod graph;
pub mod host;
mod hostops;
pub mod inspect;
mod layer;
pub mod model;
pub mod npy;
mod ops;
pub mod proto;
mod replay;
pub mod session;
mod shapes;
mod value;

pub use error::{OnnxError, Result};
pub use generate::{DecoderLayout, GenerateOptions, Generation, Generator, StopReason};
pub use graph::{Dim, ValueInfo};
pub use host::{DType, Data, HostTensor};
pub use layer::OnnxLayer;
pub use model::{Model, Precision};
pub use ops::registry;
pub use ops::{SUPPORTED as SUPPORTED_OPS, SUPPORTED_MS as SUPPORTED_MS_OPS};
pub use session::{Input, Pause, RunOptions, Session, Value, WeightStorage, DEFAULT_MAX_WORK, ITERATION_WORK};
