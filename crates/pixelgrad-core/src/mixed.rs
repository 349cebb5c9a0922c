//! Mixed-precision autodiff: activations kept for the backward pass in half precision.
//!
//! Inside a [`mixed_precision`] scope, on a device whose backend narrows to f16
//! ([`Caps::narrow_f16`](crate::Caps::narrow_f16)), every intermediate tensor that a recorded op keeps
//! for the backward pass is kept as an f16 copy ([`Op::NarrowF16`](crate::Op::NarrowF16)) instead of the f32 result:
//! once the forward code drops its own handle, the f32 memory goes back to the device and
//! only the half-size copy stays until the backward pass. The forward pass itself computes
//! in f32 from f32 values; the backward pass reads the saved copies back to f32
//! ([`Op::Widen`](crate::Op::Widen)) and every gradient it computes is rounded through f16 too, so gradients
//! have f16's range: values past ±65504 become infinite and tiny ones flush to zero, which is
//! what loss scaling (in `pixelgrad_nn`) is for. Parameters, inputs and other leaves are never
//! narrowed (they are the caller's, and parameters are the f32 master weights), nor are the
//! index inputs of gather and scatter (whole numbers past 2048 are not exact in f16).
//!
//! On a device without f16 narrowing the scope changes nothing: training runs in f32.
//! [`mixed_precision_available`] says which, so callers can report the fallback.
//!
//! [`Tensor::graph_bytes`](crate::Tensor::graph_bytes) measures what a graph keeps for its
//! backward pass, the quantity this halves.
//!
//! This file is the scope's public face; what it does to the graph (the copies, their cache,
//! the rounded gradients) is `crate::tensor::kept`, where tensors are recorded.

use crate::tensor::{kept, Device};

/// While the returned guard lives, tensors recorded for autodiff are kept in f16 and
/// gradients are rounded through f16 (see the module docs). Nested scopes are allowed; the
/// copies made in a scope are forgotten when the outermost one ends.
pub fn mixed_precision() -> MixedPrecisionGuard {
    kept::open_scope();
    MixedPrecisionGuard { _private: () }
}

/// Ends a [`mixed_precision`] scope on drop.
pub struct MixedPrecisionGuard {
    _private: (),
}

impl Drop for MixedPrecisionGuard {
    fn drop(&mut self) {
        kept::close_scope();
    }
}

/// True inside a [`mixed_precision`] scope.
pub fn mixed_precision_enabled() -> bool {
    kept::scope_open()
}

/// True if a [`mixed_precision`] scope has an effect on `device` (its backend narrows f32 to
/// f16); false where training stays f32 in such a scope.
pub fn mixed_precision_available(device: &Device) -> bool {
    kept::narrows_to_f16(device)
}
