//! Step replay, watched through the backend's counters: a small MLP trains on the embedded
//! digits, each step inside `Device::step`. On the GPU backends the first steps record a plan
//! and from the fifth step on nothing is allocated, compiled or bound: every launch is
//! replayed. On the CPU there is nothing to plan and the counters only show launches.
//!
//! `cargo run --release -p pixelgrad --example step_plan` (CPU), or with
//! `--features webgpu -- webgpu` (any Vulkan/Metal/DX12 adapter, Mesa lavapipe included).

use pixelgrad::nn::presets::{ModelSpec, Preset};
use pixelgrad::nn::train::Samples;
use pixelgrad::nn::{Mode, Module, OptimizerKind};
use pixelgrad::{cpu::CpuBackend, data, Device};

fn device(name: &str) -> Result<Device, Box<dyn std::error::Error>> {
    match name {
        "cpu" => Ok(Device::new(CpuBackend::new())),
        #[cfg(feature = "webgpu")]
        "webgpu" => Ok(Device::new(pixelgrad::wgpu::WgpuBackend::new(Default::default())?)),
        other => Err(format!("unknown or disabled backend '{other}' (cpu; webgpu needs --features webgpu)").into()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "cpu".into());
    let dev = device(&name)?;
    println!("{}", dev.name());
    let set = data::digits()?;
    let shape = [1usize, 8, 8];
    let samples = Samples::new(set.images(), &shape, set.labels())?;
    let model = ModelSpec { preset: Preset::Mlp, input: shape, classes: 10 }.build(&dev, 1)?;
    let mut opt = OptimizerKind::parse("adam")?.build(0.003);
    let loss_fn = Preset::Mlp.loss();
    let batch = 32;
    let mut before = dev.counters();
    for step in 0..8 {
        let idx: Vec<usize> = (step * batch..(step + 1) * batch).collect();
        // Everything the step does on the device happens inside `step`: the batch upload,
        // forward, backward and update. The key names the structure (here: the batch size).
        let loss = dev.step(batch as u64, || {
            let (x, y) = samples.batch(&dev, &idx)?;
            let loss = loss_fn.compute(&model.forward(&x, Mode::Train)?, &y)?;
            loss.backward()?;
            opt.step(&model)?;
            Ok(loss.detach())
        })?;
        let now = dev.counters();
        println!(
            "step {step}: launches {:>3}, replayed {:>3}, allocations {:>3}, compiles {:>2}, bindings {:>3}",
            now.launches - before.launches,
            now.replayed - before.replayed,
            now.allocations - before.allocations,
            now.compiles - before.compiles,
            now.bindings - before.bindings,
        );
        before = now;
        if step == 7 {
            println!("loss after 8 steps: {:.4}", loss.to_vec()?[0]);
        }
    }
    Ok(())
}
