//! Full (RGBA32F) against half (RGBA16F) tensor storage on WebGL2 (or, with `webgl1`, in the
//! `webgl1` mode's float and half-float textures), for the benchmarks page:
//! the digits MLP or CNN trained for a few epochs from the same seed on each, and on the CPU,
//! with test accuracy, milliseconds per step (the whole `fit`, logs included, over its steps)
//! and the device memory held at the end (in use plus pooled, `Device::counters`).
//!
//! ```text
//! cargo run --release -p pixelgrad-webgl --example half_storage -- [mlp|cnn] [adam|sgd] [EPOCHS] [lr=LR] [mixed] [--emulate] [webgl1]
//! ```
//!
//! Half storage here is `force_half_float` (what a device without `EXT_color_buffer_float`
//! falls back to; `tests/half_only.rs` checks that the two train alike); `--emulate` adds the
//! half-arithmetic emulation to it; `mixed` trains with `Precision::Mixed` (dynamic loss
//! scaling; on RGBA16F the scaler of `pixelgrad_nn::mixed` for tensors that are halves);
//! `webgl1` runs both storages in the `webgl1` mode (GLSL ES 1.00; half floats as a device
//! with only OES_texture_half_float + EXT_color_buffer_half_float stores them).

use std::time::Instant;

use pixelgrad_core::{Device, Result};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{OptimizerKind, Precision};
use pixelgrad_webgl::{EmulatedPrecision, WebGlBackend, WebGlOptions};

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let preset = if args.iter().any(|a| a == "cnn") { Preset::Cnn } else { Preset::Mlp };
    let opt = if args.iter().any(|a| a == "sgd") { "sgd" } else { "adam" };
    let epochs = args.iter().find_map(|a| a.parse::<usize>().ok()).unwrap_or(2);
    let emulate = args.iter().any(|a| a == "--emulate");
    let webgl1 = args.iter().any(|a| a == "webgl1");
    let mode = if webgl1 { "webgl1" } else { "webgl2" };
    let precision = if args.iter().any(|a| a == "mixed") { Precision::Mixed } else { Precision::F32 };
    let lr = args.iter().find_map(|a| a.strip_prefix("lr=")?.parse::<f32>().ok()).unwrap_or(if opt == "sgd" { 0.05 } else { 0.003 });
    let split = pixelgrad_data::digits_split(0.2, 7)?;
    let run = |label: &str, dev: Device| -> Result<()> {
        let model = ModelSpec { preset, input: split.train.shape(), classes: split.train.classes() }.build(&dev, 3)?;
        let shape = split.train.shape();
        let s = Samples::new(split.train.images(), &shape, split.train.labels())?;
        let t = Samples::new(split.test.images(), &shape, split.test.labels())?;
        let mut o = OptimizerKind::parse(opt)?.build(lr);
        let opts =
            FitOptions { epochs, batch_size: 32, read_every: 10, seed: 5, checkpoint_every: Some(0), precision, ..Default::default() };
        let start = Instant::now();
        let h = fit(&model, o.as_mut(), preset.loss(), &dev, s, Some(t), &opts, &mut NoCallbacks)?;
        let secs = start.elapsed().as_secs_f64();
        let steps = split.train.len().div_ceil(32) * epochs;
        let acc = h.epochs.last().and_then(|e| e.test_accuracy).unwrap_or(f32::NAN);
        let last = h.steps.last().map(|s| s.loss).unwrap_or(f32::NAN);
        let scale = h
            .mixed
            .as_ref()
            .map(|m| format!(" ({}, scale {}, {} skipped)", m.precision, m.final_scale, m.skipped_steps))
            .unwrap_or_default();
        let c = dev.counters();
        let mem = c.bytes_in_use + c.pooled_bytes;
        println!(
            "| {preset:?} | {opt} {lr} | {label}{scale} | {epochs} | {last:.4} | {acc:.4} | {:.2} | {mem} |",
            1e3 * secs / steps as f64
        );
        Ok(())
    };
    println!("| model | optimiser | storage | epochs | last logged loss | test accuracy | ms/step | bytes in use + pooled |");
    println!("|---|---|---|---|---|---|---|---|");
    run("cpu", Device::new(CpuBackend::new()))?;
    let full = WebGlBackend::new_headless(WebGlOptions { self_test: false, webgl1, ..Default::default() })?;
    run(&format!("{mode} RGBA32F"), Device::new(full))?;
    let half = WebGlBackend::new_headless(WebGlOptions {
        self_test: false,
        force_half_float: true,
        webgl1,
        emulate_precision: emulate.then_some(EmulatedPrecision::Half),
        ..Default::default()
    })?;
    run(&format!("{mode} RGBA16F{}", if emulate { " + half arithmetic" } else { "" }), Device::new(half))?;
    Ok(())
}
