//! Random architectures trained on a backend, against the f64 reference.
//!
//! The families exercise each op alone, and `training_curve*` two fixed networks. Here a seeded
//! generator stacks the `pixelgrad-nn` layers: convolutions of every kernel, stride and padding
//! that fit, max and average pools, batch norms, the activations, dense layers and a softmax.
//! Each network trains three steps with SGD, momentum or Nesterov ([`OPTIMIZERS`]) on the
//! backend under test, on the f32 CPU backend and on the f64 reference. Every parameter and loss is compared with the
//! reference. A backend passes where it is about as close as the f32 CPU backend, or within
//! 1e-3 of the values' scale. A badly conditioned network (a batch norm over a near-constant channel)
//! moves f32 off the reference on every backend. Comparing against f32's own distance keeps
//! those draws without loosening the test for the rest.

use pixelgrad_core::composite::cross_entropy;
use pixelgrad_core::{Device, Result, Tensor};
use pixelgrad_nn::layers::{Activation, AvgPool2d, BatchNorm, Conv2d, Flatten, Linear, MaxPool2d};
use pixelgrad_nn::{Init, Mode, Module, OptimizerKind, Sequential};

use crate::harness::reference_device;

type Outcome = std::result::Result<(), String>;

/// The optimizers the draws cycle through. Adam, AdamW and RMSprop divide each step by the
/// gradient's own size, so where a gradient is near rounding noise they turn each backend's
/// noise into full steps in their own directions: over 250 draws, the only differences past
/// the bounds came from them, on networks where the f32 CPU backend also left the reference.
/// They have their own tests (`pixelgrad-nn`'s optimizers, the fused-update tests).
pub const OPTIMIZERS: [&str; 3] = ["sgd", "momentum", "nesterov"];

/// A linear congruential generator: the same draws on every platform.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
}

fn activation(rng: &mut Lcg) -> Activation {
    match rng.below(5) {
        0 => Activation::Relu,
        1 => Activation::LeakyRelu(0.2),
        2 => Activation::Sigmoid,
        3 => Activation::Tanh,
        _ => Activation::Gelu,
    }
}

/// One random architecture with its data.
pub struct Draw {
    pub net: Sequential,
    /// The input, `[n, c, h, w]` with n from 2 to 5.
    pub x: Tensor,
    /// The class of each sample, below the network's output width.
    pub y: Tensor,
}

/// Draw number `seed`: a random stack of convolutions, pools, batch norms and activations,
/// then a flatten and one or two dense layers (each maybe with a batch norm), maybe a softmax;
/// with its input and classes. `None` when the draw shrinks the image to nothing. The same
/// seed gives the same network and weights on every device.
pub fn draw(dev: &Device, seed: u64) -> Result<Option<Draw>> {
    let mut rng = Lcg(seed ^ 0x005e_ed0f_a7c4);
    let (mut c, mut h, mut w) = (rng.range(1, 3), rng.range(4, 14), rng.range(4, 14));
    let (c0, h0, w0) = (c, h, w);
    let mut init = Init::new(seed);
    let mut net = Sequential::new();
    for _ in 0..rng.range(1, 4) {
        match rng.below(4) {
            0 | 1 => {
                let (k, s) = (rng.range(1, 4), rng.range(1, 3));
                let p = rng.range(0, if k == 1 { 1 } else { k.min(3) - 1 });
                let out = rng.range(1, 6);
                if h + 2 * p < k || w + 2 * p < k {
                    return Ok(None);
                }
                net = net.push(Conv2d::new(dev, c, out, k, s, p, &mut init)?);
                (c, h, w) = (out, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1);
                if rng.below(2) == 0 {
                    net = net.push(BatchNorm::new_2d(dev, c)?);
                }
                net = net.push(activation(&mut rng));
            }
            2 => {
                let (k, s) = (rng.range(2, 3), rng.range(1, 3));
                let p = rng.range(0, k / 2);
                if h + 2 * p < k || w + 2 * p < k {
                    return Ok(None);
                }
                net = if rng.below(2) == 0 {
                    net.push(MaxPool2d { kernel: k, stride: s, padding: p })
                } else {
                    net.push(AvgPool2d { kernel: k, stride: s, padding: p })
                };
                (h, w) = ((h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1);
            }
            _ => net = net.push(activation(&mut rng)),
        }
    }
    let mut features = c * h * w;
    net = net.push(Flatten);
    for _ in 0..rng.range(1, 2) {
        let out = rng.range(2, 9);
        net = net.push(Linear::new(dev, features, out, &mut init)?);
        if rng.below(3) == 0 {
            net = net.push(BatchNorm::new_1d(dev, out)?);
        }
        net = net.push(activation(&mut rng));
        features = out;
    }
    if rng.below(2) == 0 {
        net = net.push(Activation::Softmax);
    }
    // at least two samples: a batch norm over one sample has no gradient at all
    let n = rng.range(2, 5);
    let xs: Vec<f32> = (0..n * c0 * h0 * w0).map(|i| (i as f32 * 0.37 + seed as f32).sin()).collect();
    let x = Tensor::from_vec(dev, &xs, [n, c0, h0, w0])?;
    let y: Vec<f32> = (0..n).map(|i| ((i * 7 + seed as usize) % features) as f32).collect();
    let y = Tensor::from_vec(dev, &y, [n])?;
    Ok(Some(Draw { net, x, y }))
}

/// What a training run leaves: the loss before each step and every parameter after the last.
struct Run {
    describe: String,
    losses: Vec<f32>,
    params: Vec<(String, Vec<f32>)>,
}

fn train(dev: &Device, seed: u64) -> Result<Option<Run>> {
    let Some(Draw { net, x, y }) = draw(dev, seed)? else { return Ok(None) };
    let mut opt = OptimizerKind::parse(OPTIMIZERS[seed as usize % OPTIMIZERS.len()])?.build(0.05);
    let mut losses = Vec::new();
    for _ in 0..3 {
        net.zero_grad();
        let loss = cross_entropy(&net.forward(&x, Mode::Train)?, &y)?;
        losses.push(loss.to_vec()?[0]);
        loss.backward()?;
        opt.step(&net)?;
    }
    let mut params = Vec::new();
    let mut failed = None;
    net.visit_params(&mut |name, p| match p.tensor().to_vec() {
        Ok(v) => params.push((name.to_string(), v)),
        Err(e) => failed = Some(e),
    });
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(Some(Run { describe: net.describe(), losses, params }))
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, |m, d| if d.is_nan() { f32::INFINITY } else { m.max(d) })
}

/// Trains the first `count` draws that fit on `dev`, on the f32 CPU backend and on the f64
/// reference, three steps each, and fails naming every draw where `dev` is further from the
/// reference than 4x the f32 CPU backend's distance plus 1e-3 of the values' scale (the
/// training curves' tolerance): GPU transcendentals a few ulps off the CPU's, through a batch
/// norm over a few samples, grow to ~7e-4 in three steps on well-behaved draws.
pub fn random_architectures(dev: &Device, count: usize) -> Outcome {
    let cpu = Device::new(pixelgrad_cpu::CpuBackend::new());
    let reference = reference_device();
    let mut bad = Vec::new();
    let mut made = 0;
    for seed in 0..count as u64 * 4 {
        if made == count {
            break;
        }
        let want = match train(&reference, seed) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => return Err(format!("random_nets/{seed}: the reference failed: {e}")),
        };
        made += 1;
        let f32_cpu = train(&cpu, seed).map_err(|e| format!("random_nets/{seed}: cpu failed: {e}"))?.ok_or("draws differ")?;
        let got = match train(dev, seed) {
            Ok(Some(r)) => r,
            Ok(None) => return Err(format!("random_nets/{seed}: the draw did not fit on {}", dev.name())),
            Err(e) => {
                bad.push(format!("random_nets/{seed}: {e} ({})", want.describe));
                continue;
            }
        };
        for (i, ((w, c), g)) in want.losses.iter().zip(&f32_cpu.losses).zip(&got.losses).enumerate() {
            let (e_dev, e_cpu) = ((g - w).abs(), (c - w).abs());
            if e_dev.is_nan() || e_dev > 4.0 * e_cpu + 1e-3 * w.abs().max(1e-3) {
                bad.push(format!("random_nets/{seed}: loss at step {i} {g} against {w} (f32 cpu {c}): {}", want.describe));
            }
        }
        for (((name, w), (_, c)), (_, g)) in want.params.iter().zip(&f32_cpu.params).zip(&got.params) {
            // (at least 0.05: a bias before a batch norm has only rounding noise for a gradient)
            let scale = w.iter().fold(0.05f32, |m, v| m.max(v.abs()));
            let (e_dev, e_cpu) = (max_diff(g, w), max_diff(c, w));
            if e_dev.is_nan() || e_dev > 4.0 * e_cpu + 1e-3 * scale {
                bad.push(format!(
                    "random_nets/{seed}: {name} off by {e_dev:.2e} (f32 cpu {e_cpu:.2e}, scale {scale:.2e}): {}",
                    want.describe
                ));
            }
        }
    }
    if made < count {
        return Err(format!("random_nets: only {made} of {count} draws fit"));
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{} problem(s) on {} over {made} random architectures:\n{}", bad.len(), dev.name(), bad.join("\n")))
    }
}
