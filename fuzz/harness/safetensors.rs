// safetensors model files as `pixelgrad eval` / `predict` read them (architecture from the
// header, then the weights), and checkpoint files as `fit({ resume })` reads them.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/safetensors.rs` and the stable test that runs
// the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any panic
// is a bug.
use pixelgrad_core::Device;
use pixelgrad_nn::checkpoint::Checkpoint;
use pixelgrad_nn::presets::{ModelSpec, Preset, SPEC_KEY};
use pixelgrad_nn::{io, OptimizerKind};

pub fn run(data: &[u8]) {
    let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
    if let Ok(meta) = io::read_metadata(data) {
        if let Some(spec) = meta.get(SPEC_KEY).and_then(|s| ModelSpec::from_meta(s).ok()) {
            if let Ok(model) = spec.build(&dev, 0) {
                let _ = io::load_bytes(&model, data);
            }
        }
    }
    // a fixed small architecture, as the browser loads a saved model into its config
    let model = ModelSpec { preset: Preset::Mlp, input: [1, 2, 2], classes: 3 }.build(&dev, 0).expect("small mlp");
    let _ = io::load_bytes(&model, data);
    if let Ok((ck, _)) = Checkpoint::from_bytes(data) {
        let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
        let _ = ck.restore(&model, opt.as_mut(), &dev);
    }
}
