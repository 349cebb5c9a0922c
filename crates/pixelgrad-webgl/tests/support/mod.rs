//! What the training tests share: the digits split they train on, in the layout a preset takes.

use pixelgrad_core::Device;
use pixelgrad_data::Dataset;
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::Sequential;

/// The digits' train and test splits (seed 7) as `preset` takes them (the binary task for
/// `seed-mlp`), and the preset built on `dev` from seed 3.
pub fn digits_for(dev: &Device, preset: Preset) -> (Dataset, Dataset, Sequential) {
    let split = pixelgrad_data::digits_split(0.2, 7).unwrap();
    let (train, test) = if preset == Preset::SeedMlp {
        (pixelgrad_data::seed_mlp_view(&split.train).unwrap(), pixelgrad_data::seed_mlp_view(&split.test).unwrap())
    } else {
        (split.train, split.test)
    };
    let model = ModelSpec { preset, input: train.shape(), classes: train.classes() }.build(dev, 3).unwrap();
    (train, test, model)
}
