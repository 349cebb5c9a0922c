//! What a server can make this node accept: every bound is checked before the bytes are pulled,
//! the memory allocated or the local work started, and crossing one is a
//! [`FlowerError::Limit`] naming the quantity and how to raise it.
//!
//! A message's bounds come from the local model itself ([`MessageLimits::for_model`]): a train
//! or evaluate instruction carries exactly the model's parameters, so anything much larger is
//! refused. Transport bounds (bytes per HTTP answer, seconds per request) are in
//! [`crate::transport`]; the ceilings on server-requested local epochs and rounds are
//! [`crate::node::NodeOptions::max_epochs`] and [`crate::node::NodeOptions::max_rounds`].

use crate::{FlowerError, Result};

/// Largest `ArrayChunk` body (flwr's `FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE` default, 5 MiB).
pub const MAX_ARRAY_CHUNK: usize = 5 * 1024 * 1024;

/// Bytes allowed on top of the parameters' own: object heads, `np.save` headers, reference
/// JSON, metadata, the train config and metrics (a real message of this project's ServerApp
/// has a few KiB of it).
pub const MESSAGE_OVERHEAD_BYTES: u64 = 1024 * 1024;
/// The same per parameter tensor (its `Array` object, chunk heads, npy header, its reference).
pub const PER_TENSOR_OVERHEAD_BYTES: u64 = 1024;
/// Default share by which a message may exceed the model's parameter count and bytes.
pub const DEFAULT_MARGIN: f64 = 0.05;
/// Depth of a Flower message's object tree: Message → RecordDict → record → Array → ArrayChunk.
pub const MAX_TREE_DEPTH: usize = 5;

/// Bounds on one pulled message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageLimits {
    /// Most distinct objects in the message's tree (also the most entries in one reference
    /// map and the most chunk references of one array).
    pub max_objects: usize,
    /// Most bytes pulled for the message, all objects together.
    pub max_bytes: u64,
    /// Most array elements the message may expand to, counting every reference (an array
    /// named twice counts twice, a chunk listed twice counts twice).
    pub max_elements: u64,
}

impl MessageLimits {
    /// Limits for a model whose parameter tensors have `shapes`: at most `1 + margin` times
    /// its elements (plus 1024) and its f32 bytes (plus [`MESSAGE_OVERHEAD_BYTES`] and
    /// [`PER_TENSOR_OVERHEAD_BYTES`] per tensor), and the objects such a message needs.
    pub fn for_model(shapes: &[Vec<usize>], margin: f64) -> Result<Self> {
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(FlowerError::Invalid(format!(
                "message margin must be a non-negative number, got {margin}"
            )));
        }
        let mut elements: u64 = 0;
        for s in shapes {
            let n = s
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
                .and_then(|n| elements.checked_add(n));
            elements =
                n.ok_or_else(|| FlowerError::Invalid(format!("parameter shape {s:?} overflows")))?;
        }
        let tensors = shapes.len() as u64;
        let max_elements = (elements as f64 * (1.0 + margin)).ceil() as u64 + 1024;
        let max_bytes = max_elements
            .saturating_mul(4)
            .saturating_add(MESSAGE_OVERHEAD_BYTES)
            .saturating_add(tensors.saturating_mul(PER_TENSOR_OVERHEAD_BYTES));
        // Message, RecordDict, a few records; per tensor an Array and its first chunk; one more
        // chunk per full 5 MiB.
        let max_objects = 16u64
            .saturating_add(tensors.saturating_mul(2))
            .saturating_add(max_bytes / MAX_ARRAY_CHUNK as u64 + 1);
        Ok(MessageLimits {
            max_objects: usize::try_from(max_objects).unwrap_or(usize::MAX),
            max_bytes,
            max_elements,
        })
    }

    /// Like [`Self::for_model`], with room for the parameters as float64 (what Flower's
    /// `SecAggPlusWorkflow` sends back after the first round: its unmasked mean is float64).
    pub fn for_model_f64(shapes: &[Vec<usize>], margin: f64) -> Result<Self> {
        let mut l = Self::for_model(shapes, margin)?;
        l.max_bytes = l.max_bytes.saturating_add(l.max_elements.saturating_mul(4));
        l.max_objects = l.max_objects.saturating_add(
            usize::try_from(l.max_bytes / MAX_ARRAY_CHUNK as u64 + 1).unwrap_or(usize::MAX),
        );
        Ok(l)
    }

    /// Limits for inspecting arbitrary messages (fuzzing, tools): 64 MiB, 16 M elements.
    pub fn generous() -> Self {
        MessageLimits {
            max_objects: 4096,
            max_bytes: 64 * 1024 * 1024,
            max_elements: 16 * 1024 * 1024,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_model() {
        // digits MLP: 64x256 + 256 + 256x10 + 10 = 19,210 parameters
        let shapes = vec![vec![64, 256], vec![256], vec![256, 10], vec![10]];
        let l = MessageLimits::for_model(&shapes, 0.05).unwrap();
        assert_eq!(l.max_elements, (19_210f64 * 1.05).ceil() as u64 + 1024);
        assert_eq!(l.max_bytes, l.max_elements * 4 + 1024 * 1024 + 4 * 1024);
        assert_eq!(l.max_objects, 16 + 8 + 1);
        assert!(MessageLimits::for_model(&[vec![usize::MAX, 2]], 0.05).is_err());
        assert!(MessageLimits::for_model(&shapes, f64::NAN).is_err());
    }
}
