//! What several test files of this crate share.

use pixelgrad_core::Device;
use pixelgrad_nn::layers::{Activation, Linear};
use pixelgrad_nn::{Init, Sequential};

/// The 64-32-10 ReLU MLP on the digits, from a fixed seed.
pub fn mlp(dev: &Device) -> Sequential {
    let mut init = Init::new(11);
    Sequential::new()
        .push(Linear::new(dev, 64, 32, &mut init).unwrap())
        .push(Activation::Relu)
        .push(Linear::new(dev, 32, 10, &mut init).unwrap())
}
