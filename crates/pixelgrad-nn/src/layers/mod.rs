//! Layers. Each is a config plus its state, with `new` (initialises from an [`crate::Init`]
//! stream) and a forward pass; input and output shapes are documented on each type.

mod activation;
mod conv;
mod dropout;
mod linear;
mod norm;
mod pool;

pub use activation::Activation;
pub use conv::Conv2d;
pub use dropout::Dropout;
pub use linear::Linear;
pub use norm::BatchNorm;
pub use pool::{AvgPool2d, Flatten, MaxPool2d, Permute};

use pixelgrad_core::{Error, Tensor};

/// Error for an input whose shape a layer cannot take.
pub(crate) fn bad_input(layer: &'static str, x: &Tensor, msg: String) -> Error {
    Error::Shape { op: layer, shapes: vec![x.dims().to_vec()], backend: x.device().name(), msg }
}
