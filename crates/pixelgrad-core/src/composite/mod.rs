//! Ops built from primitives. None of these needs a kernel: every backend gets them, and their
//! gradients, from the primitives' rules.

mod activation;
mod attention;
mod loss;
mod select;
mod window;

pub use attention::{attention_exclusions, AttentionScores};
pub use loss::{accuracy_count, bce_with_logits, cross_entropy, cross_entropy_one_hot, mse};
pub use select::{non_max_suppression, topk, NmsOptions};
pub use window::{avg_pool2d, conv2d, crop_conv_output, max_pool2d, widen_conv_input};
