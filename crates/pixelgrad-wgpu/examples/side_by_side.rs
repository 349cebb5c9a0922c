//! Before/after in one run: the tiled (GPU-style) and the register-blocked (CPU adapter)
//! matmul kernels on the same adapter, as matmul GFLOP/s and training steps/s of the three
//! presets (the same workloads as `pixelgrad bench`). Benchmark, not a test.
//!
//! `cargo run --release -p pixelgrad-wgpu --example side_by_side -- [seconds] [sizes]`

#[cfg(not(target_arch = "wasm32"))]
fn main() -> pixelgrad_core::Result<()> {
    use pixelgrad_core::{Device, Tensor};
    use pixelgrad_nn::presets::{ModelSpec, Preset};
    use pixelgrad_nn::train::Samples;
    use pixelgrad_nn::{Mode, Module, OptimizerKind};
    use pixelgrad_wgpu::{MatmulKernel, WgpuBackend, WgpuOptions};
    use std::time::Instant;

    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let sizes: Vec<usize> = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "256,1024".into())
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();

    // Runs `f` three times to warm up, then for `secs`; returns runs per second. Lavapipe
    // compiles a pipeline's machine code when it first *runs*, seconds per kernel, so a
    // warm-up that does not wait for the GPU leaves that inside the timed window.
    fn rate(secs: f64, mut f: impl FnMut() -> pixelgrad_core::Result<()>) -> pixelgrad_core::Result<f64> {
        for _ in 0..3 {
            f()?;
        }
        let t = Instant::now();
        let mut n = 0;
        while n < 2 || t.elapsed().as_secs_f64() < secs {
            f()?;
            n += 1;
        }
        Ok(n as f64 / t.elapsed().as_secs_f64())
    }

    let kinds = [MatmulKernel::Tiled, MatmulKernel::Registers];
    let devs: Vec<Device> = kinds
        .iter()
        .map(|&matmul| WgpuBackend::new(WgpuOptions { matmul, ..Default::default() }).map(Device::new))
        .collect::<pixelgrad_core::Result<_>>()?;
    println!("adapter: {}", devs[0].name());
    println!("{:<34} {:>12} {:>12} {:>7}", "workload", "tiled", "registers", "ratio");
    let row = |label: &str, v: &[f64]| println!("{label:<34} {:>12.2} {:>12.2} {:>6.1}x", v[0], v[1], v[1] / v[0]);

    for &n in &sizes {
        let mut v = Vec::new();
        for dev in &devs {
            let a = Tensor::rand_uniform(dev, [n, n], -1.0, 1.0, 1)?;
            let b = Tensor::rand_uniform(dev, [n, n], -1.0, 1.0, 2)?;
            let per = if n <= 512 { 8 } else { 2 };
            let r = rate(secs, || {
                let mut c = a.matmul(&b)?;
                for _ in 1..per {
                    c = a.matmul(&b)?;
                }
                c.slice(0, 0, 1)?.slice(1, 0, 1)?.to_vec()?;
                Ok(())
            })?;
            v.push(r * per as f64 * 2.0 * (n as f64).powi(3) / 1e9);
        }
        row(&format!("matmul {n}^3 GFLOP/s"), &v);
    }

    let workloads = [
        ("seed-mlp steps/s", Preset::SeedMlp, [1, 6, 8], 2, 1),
        ("mlp 784-256-10 b64 steps/s", Preset::Mlp, [1, 28, 28], 10, 64),
        ("cnn b32 steps/s", Preset::Cnn, [1, 28, 28], 10, 32),
    ];
    for (label, preset, input, classes, batch) in workloads {
        let mut v = Vec::new();
        for dev in &devs {
            let model = ModelSpec { preset, input, classes }.build(dev, 1)?;
            let per: usize = input.iter().product();
            let n = batch * 8;
            let x: Vec<f32> = (0..n * per).map(|i| pixelgrad_core::rng::uniform(9, i as u64)).collect();
            let y: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
            let samples = Samples::new(&x, &input, &y)?;
            let kind = if preset == Preset::SeedMlp { "sgd" } else { "adam" };
            let mut opt = OptimizerKind::parse(kind)?.build(0.01);
            let loss_fn = preset.loss();
            let mut i = 0usize;
            let r = rate(secs, || {
                let idx: Vec<usize> = (0..batch).map(|k| (i * batch + k) % n).collect();
                i += 1;
                let (xb, yb) = samples.batch(dev, &idx)?;
                let l = loss_fn.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
                l.backward()?;
                opt.step(&model)?;
                // Read the loss every 10 steps, as the training loop does (and after the
                // warm-up steps, so their GPU work is done before timing starts).
                if i.is_multiple_of(10) || i == 3 {
                    l.to_vec()?;
                } else {
                    dev.flush()?;
                }
                Ok(())
            })?;
            v.push(r);
        }
        row(label, &v);
    }
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
