//! Trains a small MLP on the embedded 8x8 digits set with the CPU backend.
//! `cargo run --release -p pixelgrad --example digits`

use pixelgrad::nn::layers::{Activation, Linear};
use pixelgrad::nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad::nn::{Init, Loss, OptimizerKind, Sequential};
use pixelgrad::{cpu::CpuBackend, data, Device};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::new(CpuBackend::new());
    let split = data::digits_split(0.2, 42)?; // embedded 8x8 digits
    let mut init = Init::new(42);
    let model = Sequential::new()
        .push(Linear::new(&dev, 64, 128, &mut init)?)
        .push(Activation::Relu)
        .push(Linear::new(&dev, 128, 10, &mut init)?);
    let mut opt = OptimizerKind::parse("adam")?.build(0.003);
    let shape = [64usize];
    let train = Samples::new(split.train.images(), &shape, split.train.labels())?;
    let test = Samples::new(split.test.images(), &shape, split.test.labels())?;
    let opts = FitOptions { epochs: 20, batch_size: 32, ..Default::default() };
    let h = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, Some(test), &opts, &mut NoCallbacks)?;
    println!("test accuracy {:?}", h.epochs.last().and_then(|e| e.test_accuracy));
    Ok(())
}
