//! The browser benchmark's training workloads (`web/bench/lib/workloads.mjs`: seed-mlp
//! 48-64-2 batch 1, mnist-mlp 784-128-10 batch 64, the 8/16-filter cnn batch 32; plain SGD)
//! run natively, one after another on one device as the benchmark page does: the first
//! step's time, pipelines compiled and launches, then steps/s. Shows how many pipelines a
//! first step compiles and what they cost on this adapter. Benchmark, not a test.
//!
//! `cargo run --release -p pixelgrad-wgpu --example first_step -- [auto|tiled|registers] [seconds]`
//!
//! Chromium's SwiftShader can be run natively through its Vulkan ICD:
//! `VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json cargo run ...`.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> pixelgrad_core::Result<()> {
    use pixelgrad_core::{Device, Tensor};
    use pixelgrad_nn::layers::{Activation, Conv2d, Flatten, Linear, MaxPool2d};
    use pixelgrad_nn::init::WeightInit;
    use pixelgrad_nn::{Init, Loss, Mode, Module, OptimizerKind, Sequential};
    use pixelgrad_wgpu::{MatmulKernel, WgpuBackend, WgpuOptions};
    use std::time::Instant;

    let matmul = match std::env::args().nth(1).as_deref() {
        Some("tiled") => MatmulKernel::Tiled,
        Some("registers") => MatmulKernel::Registers,
        _ => MatmulKernel::Auto,
    };
    let secs: f64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let t = Instant::now();
    let dev = Device::new(WgpuBackend::new(WgpuOptions { matmul, ..Default::default() })?);
    println!("adapter: {} ({matmul:?}), device in {:.0} ms", dev.name(), t.elapsed().as_secs_f64() * 1e3);

    struct Work {
        name: &'static str,
        input: Vec<usize>,
        classes: usize,
        batch: usize,
        loss: Loss,
        lr: f32,
    }
    let works = [
        Work { name: "seed-mlp", input: vec![48], classes: 2, batch: 1, loss: Loss::Mse, lr: 0.5 },
        Work { name: "mnist-mlp", input: vec![784], classes: 10, batch: 64, loss: Loss::CrossEntropy, lr: 0.1 },
        Work { name: "cnn", input: vec![1, 28, 28], classes: 10, batch: 32, loss: Loss::CrossEntropy, lr: 0.05 },
    ];
    for w in works {
        let mut init = Init::new(1);
        let model = match w.name {
            "seed-mlp" => Sequential::new()
                .push(Linear::with_init(&dev, 48, 64, WeightInit::Glorot, true, &mut init)?)
                .push(Activation::Sigmoid)
                .push(Linear::with_init(&dev, 64, 2, WeightInit::Glorot, true, &mut init)?)
                .push(Activation::Sigmoid),
            "mnist-mlp" => Sequential::new()
                .push(Linear::with_init(&dev, 784, 128, WeightInit::Glorot, true, &mut init)?)
                .push(Activation::Relu)
                .push(Linear::with_init(&dev, 128, 10, WeightInit::Glorot, true, &mut init)?),
            _ => Sequential::new()
                .push(Conv2d::new(&dev, 1, 8, 3, 1, 0, &mut init)?)
                .push(Activation::Relu)
                .push(MaxPool2d::new(2))
                .push(Conv2d::new(&dev, 8, 16, 3, 1, 0, &mut init)?)
                .push(Activation::Relu)
                .push(MaxPool2d::new(2))
                .push(Flatten)
                .push(Linear::with_init(&dev, 16 * 5 * 5, 10, WeightInit::Glorot, true, &mut init)?),
        };
        let per: usize = w.input.iter().product();
        let x: Vec<f32> = (0..w.batch * per).map(|i| pixelgrad_core::rng::uniform(9, i as u64)).collect();
        let mut xs = vec![w.batch];
        xs.extend(&w.input);
        let xb = Tensor::from_vec(&dev, &x, xs)?;
        // Class indices (MSE one-hots them itself).
        let y: Vec<f32> = (0..w.batch).map(|i| (i % w.classes) as f32).collect();
        let yb = Tensor::from_vec(&dev, &y, [w.batch])?;
        let mut opt = OptimizerKind::parse("sgd")?.build(w.lr);
        let mut step = |read: bool| -> pixelgrad_core::Result<()> {
            let l = w.loss.compute(&model.forward(&xb, Mode::Train)?, &yb)?;
            l.backward()?;
            opt.step(&model)?;
            if read {
                l.to_vec()?;
            } else {
                dev.flush()?;
            }
            Ok(())
        };
        for i in 0..3 {
            let c0 = dev.counters();
            let t = Instant::now();
            step(true)?;
            let c1 = dev.counters();
            println!(
                "{:<10} step {}: {:>8.1} ms, {} pipelines compiled, {} launches",
                w.name,
                i + 1,
                t.elapsed().as_secs_f64() * 1e3,
                c1.compiles - c0.compiles,
                c1.launches - c0.launches
            );
        }
        let t = Instant::now();
        let mut n = 0;
        while n < 2 || t.elapsed().as_secs_f64() < secs {
            step(n % 10 == 9)?;
            n += 1;
        }
        step(true)?;
        println!("{:<10} {:.2} steps/s", w.name, (n + 1) as f64 / t.elapsed().as_secs_f64());
    }
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {}
