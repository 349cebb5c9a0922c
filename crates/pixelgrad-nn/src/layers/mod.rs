//! Layers. Each is a config plus its state, with `new` (initialises from an [`crate::Init`]
//! stream) and a forward pass; input and output shapes are documented on each type.

mod activation;
mod attention;
mod block;
mod conv;
mod dropout;
mod embedding;
mod layer_norm;
mod linear;
mod norm;
mod pool;
mod positions;
mod rms_norm;
mod rotary;
mod time_distributed;

pub use activation::Activation;
pub use attention::{AttentionOptions, MultiHeadAttention};
pub use block::{BlockOptions, Mlp, Normalization, TransformerBlock};
pub use conv::Conv2d;
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use layer_norm::LayerNorm;
pub use linear::Linear;
pub use norm::BatchNorm;
pub use pool::{AvgPool2d, Flatten, MaxPool2d, Permute};
pub use positions::LearnedPositions;
pub use rms_norm::RmsNorm;
pub use rotary::Rotary;
pub use time_distributed::TimeDistributed;

use pixelgrad_core::{Error, Result, Tensor};

/// Error for an input whose shape a layer cannot take.
pub(crate) fn bad_input(layer: &'static str, x: &Tensor, msg: String) -> Error {
    Error::Shape { op: layer, shapes: vec![x.dims().to_vec()], backend: x.device().name(), msg }
}

/// Error for a layer built with options it cannot take (sizes of 0, heads that do not divide).
pub(crate) fn bad_option(layer: &'static str, msg: String) -> Error {
    Error::invalid(layer, msg)
}

/// `x [.., D]` as rows `[n, D]` (every axis but the last merged), for the position-wise layers.
/// The options every last-axis normalisation takes: a width of at least 1 and a finite,
/// positive epsilon.
pub(crate) fn check_norm(layer: &'static str, dim: usize, eps: f32) -> Result<()> {
    if dim == 0 || !(eps.is_finite() && eps > 0.0) {
        return Err(bad_option(layer, format!("dim ({dim}) must be at least 1 and epsilon ({eps}) finite and above 0")));
    }
    Ok(())
}

/// A typed error unless `x`'s last axis is `dim`.
pub(crate) fn check_last_axis(layer: &'static str, x: &Tensor, dim: usize) -> Result<()> {
    if x.rank() == 0 || x.dims()[x.rank() - 1] != dim {
        return Err(bad_input(layer, x, format!("expects [.., {dim}]")));
    }
    Ok(())
}

pub(crate) fn rows(x: &Tensor) -> Result<Tensor> {
    let d = x.dims();
    let last = d.last().copied().unwrap_or(1);
    x.reshape([x.numel() / last.max(1), last])
}
