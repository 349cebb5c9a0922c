//! The seed article's network, trained as rendering: 48 inputs -> 64 sigmoid -> 2 sigmoid,
//! mean squared error, batch size 1, plain SGD, every tensor a texture and every op a draw.
//!
//! Data: the embedded 8x8 digits set seen through `pixelgrad_data::seed_mlp_view` (the central
//! 6x8 pixels, label "digit < 5"). Prints the passes one training step renders, a loss per
//! epoch (accumulated on the GPU and read once per epoch) and the test accuracy.
//!
//! ```text
//! cargo run -p pixelgrad-webgl --example seed_mlp --release [-- EPOCHS [--half] [--dump DIR]]
//! ```
//! `--half` forces RGBA16F textures; `--dump DIR` writes the weight matrices as heatmap PNGs.

use std::error::Error;

use pixelgrad_core::composite::mse;
use pixelgrad_core::{Backend, Device, Param, Tensor};
use pixelgrad_webgl::{save_png, HeatmapOptions, WebGlBackend, WebGlOptions};

const LR: f32 = 0.5;

struct Mlp {
    w1: Param,
    b1: Param,
    w2: Param,
    b2: Param,
}

impl Mlp {
    fn new(dev: &Device) -> pixelgrad_core::Result<Self> {
        // Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) from the counter-based RNG: the same
        // initial weights on every backend.
        let (a1, a2) = (1.0 / 48f32.sqrt(), 1.0 / 64f32.sqrt());
        Ok(Mlp {
            w1: Param::new(Tensor::rand_uniform(dev, [48, 64], -a1, a1, 11)?),
            b1: Param::new(Tensor::zeros(dev, [64])?),
            w2: Param::new(Tensor::rand_uniform(dev, [64, 2], -a2, a2, 12)?),
            b2: Param::new(Tensor::zeros(dev, [2])?),
        })
    }

    fn forward(&self, x: &Tensor) -> pixelgrad_core::Result<Tensor> {
        let h = x.matmul(&self.w1.tensor())?.add(&self.b1.tensor())?.sigmoid()?;
        h.matmul(&self.w2.tensor())?.add(&self.b2.tensor())?.sigmoid()
    }

    /// One SGD step; returns the loss tensor (not read back).
    fn step(&self, x: &Tensor, y: &Tensor) -> pixelgrad_core::Result<Tensor> {
        let loss = mse(&self.forward(x)?, y)?;
        loss.backward()?;
        for p in [&self.w1, &self.b1, &self.w2, &self.b2] {
            if let Some(g) = p.grad() {
                // Renders the new value into a fresh texture while the old one is sampled;
                // the old texture returns to the pool when dropped: a ping-pong pair.
                p.set(&p.tensor().detach().sub(&g.mul_scalar(LR)?)?)?;
            }
            p.zero_grad();
        }
        Ok(loss.detach())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let epochs: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(3);
    let half = args.iter().any(|a| a == "--half");
    let dump = args.iter().position(|a| a == "--dump").and_then(|i| args.get(i + 1)).cloned();

    let backend = WebGlBackend::new_headless(WebGlOptions { force_half_float: half, ..Default::default() })?;
    let report = backend.report();
    println!("backend: {}", backend.name());
    println!(
        "format {}, MAX_TEXTURE_SIZE {}, self-test max relative error {:.2e}",
        report.format.as_str(),
        report.max_texture_size,
        report.self_test.as_ref().map_or(f64::NAN, |s| s.max_rel_error)
    );
    let dev = Device::new(backend.clone());

    let split = pixelgrad_data::digits_split(0.2, 7)?;
    let train = pixelgrad_data::seed_mlp_view(&split.train)?;
    let test = pixelgrad_data::seed_mlp_view(&split.test)?;
    println!("data: {} train / {} test samples of 48 pixels, label = digit < 5", train.len(), test.len());

    // The whole training set lives on the GPU; each step slices one row (a draw, not an upload).
    let xs = Tensor::from_vec(&dev, train.images(), [train.len(), 48])?;
    let one_hot: Vec<f32> = train.labels().iter().flat_map(|&l| if l == 1 { [0.0, 1.0] } else { [1.0, 0.0] }).collect();
    let ys = Tensor::from_vec(&dev, &one_hot, [train.len(), 2])?;
    let model = Mlp::new(&dev)?;

    for epoch in 0..epochs {
        let mut total = Tensor::zeros(&dev, [])?;
        for i in 0..train.len() {
            let log = epoch == 0 && i == 1;
            if log {
                backend.set_pass_log(true);
            }
            let x = xs.slice(0, i, i + 1)?;
            let y = ys.slice(0, i, i + 1)?;
            let loss = model.step(&x, &y)?;
            total = total.add(&loss)?;
            if log {
                let passes = backend.take_pass_log();
                backend.set_pass_log(false);
                println!("\none training step = {} passes (draw calls):", passes.len());
                for (k, p) in passes.iter().enumerate() {
                    println!("  {:3}  {p}", k + 1);
                }
                println!();
            }
        }
        let mean = total.item()? / train.len() as f32;
        println!("epoch {}: mean loss {mean:.5}", epoch + 1);
        if let Some(dir) = &dump {
            std::fs::create_dir_all(dir)?;
            let opts = HeatmapOptions { pixel_size: 4, border: 1, columns: None };
            let w1 = model.w1.tensor().transpose(0, 1)?; // one row per hidden unit
            save_png(
                &backend.render_heatmap_tensor(&w1.reshape([64, 6, 8])?, HeatmapOptions { columns: Some(8), ..opts })?,
                format!("{dir}/w1_epoch{}.png", epoch + 1),
            )?;
            save_png(&backend.render_heatmap_tensor(&model.w2.tensor(), opts)?, format!("{dir}/w2_epoch{}.png", epoch + 1))?;
        }
    }

    let xt = Tensor::from_vec(&dev, test.images(), [test.len(), 48])?;
    let pred = model.forward(&xt)?.argmax(1, false)?.to_vec()?;
    let correct = pred.iter().zip(test.labels()).filter(|(p, &l)| **p as u32 == l).count();
    println!("test accuracy: {:.2}% ({correct}/{})", 100.0 * correct as f64 / test.len() as f64, test.len());
    println!("counters: {:?}", backend.counters());
    Ok(())
}
