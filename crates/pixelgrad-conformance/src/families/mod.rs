//! One function per op family: `fn(&Device) -> Result<(), String>`, checking every case of the
//! family against the f64 reference and returning all failures at once.

mod composite;
mod elementwise;
mod errors;
mod indexing;
mod linalg;
mod training;

pub use composite::{composites, one_hot};
pub use elementwise::{binary, fill, random, unary, where_};
pub use errors::errors;
pub use indexing::{concat, expand, gather, pad, permute, reshape, scatter_add, slice};
pub use linalg::{col2im, im2col, matmul, reduce};
pub use training::{cnn_loss_curve, loss_curve, training_curve, training_curve_cnn, CNN_STEPS, STEPS};
