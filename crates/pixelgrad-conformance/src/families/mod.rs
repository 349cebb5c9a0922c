//! One function per op family, checking every case of the family against the f64 reference and
//! returning all failures at once.
//!
//! Each family is written once, as an `async fn(&Device, Read)` in [`awaitable`]; the blocking
//! `fn(&Device)` of the same name here (what the native `conformance_tests!` calls) runs it with
//! [`Read::Blocking`], where every await completes at once. The browser awaits the
//! [`awaitable`] version with [`Read::Async`].

mod attention;
mod budget;
mod composite;
mod edges;
mod elementwise;
mod errors;
mod image;
mod indexing;
mod linalg;
mod nbits;
mod training;
mod windows;

use pixelgrad_core::{Device, Result};

use crate::harness::{block_outcome, block_result, Read};

pub use composite::one_hot;
pub use nbits::{packed_weight, PackedWeight};
pub use training::{CNN_STEPS, STEPS};

/// The families as `async fn(&Device, Read) -> Result<(), String>` (and the two loss curves as
/// `async fn(&Device, Read) -> pixelgrad_core::Result<Vec<f64>>`): the single implementation
/// behind both the blocking functions of [`crate::families`] and the browser suite.
pub mod awaitable {
    pub use super::attention::attention;
    pub use super::budget::budget;
    pub use super::composite::composites;
    pub use super::edges::edges;
    pub use super::elementwise::{binary, fill, random, unary, where_};
    pub use super::errors::errors;
    pub use super::image::images;
    pub use super::indexing::{concat, expand, gather, pad, permute, reshape, scatter_add, slice};
    pub use super::linalg::{col2im, conv, depthwise, im2col, matmul, max_pool, reduce};
    pub use super::training::{cnn_loss_curve, loss_curve, training_curve, training_curve_cnn};
    pub use super::windows::huge_windows;
}

/// A blocking `fn(&Device) -> Result<(), String>` per family, running [`awaitable`]'s version
/// with [`Read::Blocking`].
macro_rules! blocking_families {
    (; $($family:ident),* $(,)?) => {
        $(
            #[doc = concat!("The `", stringify!($family), "` family with blocking reads (see [`awaitable::", stringify!($family), "`]).")]
            pub fn $family(dev: &Device) -> std::result::Result<(), String> {
                block_outcome(awaitable::$family(dev, Read::Blocking))
            }
        )*
    };
}

crate::__with_family_list!([blocking_families]);

/// Loss after each of [`STEPS`] SGD steps of the fixed-seed MLP, with blocking reads (see
/// [`awaitable::loss_curve`]).
pub fn loss_curve(dev: &Device) -> Result<Vec<f64>> {
    block_result("loss_curve", dev, awaitable::loss_curve(dev, Read::Blocking))
}

/// Loss after each of [`CNN_STEPS`] SGD steps of the fixed-seed conv net, with blocking reads
/// (see [`awaitable::cnn_loss_curve`]).
pub fn cnn_loss_curve(dev: &Device) -> Result<Vec<f64>> {
    block_result("cnn_loss_curve", dev, awaitable::cnn_loss_curve(dev, Read::Blocking))
}
