//! A fixed-seed training run: a tiny MLP trained by plain SGD, written with core ops only.
//! Initial weights come from the counter-based RNG on the device itself, so every backend
//! starts from the same numbers; the loss sequence must match the f64 reference step by step.

use pixelgrad_core::composite::{conv2d, cross_entropy, max_pool2d};
use pixelgrad_core::{no_grad, Device, Error, Param, Result, Tensor};

use crate::harness::{compare, read_f64, reference_device, seed_of, Gen, Read};
use crate::tolerance::TRAINING_CURVE;

type Outcome = std::result::Result<(), String>;

/// The loss value of a one-element read.
fn first(v: Vec<f64>) -> Result<f64> {
    v.first().copied().ok_or_else(|| Error::invalid("training", "the loss tensor read back empty".to_string()))
}

/// Number of SGD steps of the curve.
pub const STEPS: usize = 30;

/// Loss after each of [`STEPS`] SGD steps of a 4-16-3 MLP (tanh and relu hidden layers) on a
/// fixed batch of 24 points.
pub async fn loss_curve(dev: &Device, read: Read) -> Result<Vec<f64>> {
    let (n, d, h, c) = (24, 4, 16, 3);
    let xv = Gen::Uniform(-1.0, 1.0).values(seed_of("training/x"), n * d);
    let yv = Gen::Indices(c).values(seed_of("training/y"), n);
    let x = Tensor::from_f64(dev, &xv, [n, d])?;
    let y = Tensor::from_f64(dev, &yv, [n])?;
    let w1 = Param::new(Tensor::rand_normal(dev, [d, h], 0.0, 0.5, 11)?);
    let b1 = Param::new(Tensor::zeros(dev, [h])?);
    let w2 = Param::new(Tensor::rand_normal(dev, [h, c], 0.0, 0.5, 12)?);
    let b2 = Param::new(Tensor::rand_uniform(dev, [c], -0.1, 0.1, 13)?);
    let params = [&w1, &b1, &w2, &b2];
    let lr = 0.5;
    let mut losses = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        for p in params {
            p.zero_grad();
        }
        let hidden = x.matmul(&w1.tensor())?.add(&b1.tensor())?.tanh()?;
        let logits = hidden.matmul(&w2.tensor())?.add(&b2.tensor())?;
        let loss = cross_entropy(&logits, &y)?;
        loss.backward()?;
        losses.push(first(read_f64(&loss, read).await?)?);
        let _g = no_grad();
        for p in params {
            if let Some(g) = p.grad() {
                p.set(&p.tensor().sub(&g.mul_scalar(lr)?)?)?;
            }
        }
    }
    Ok(losses)
}

pub async fn training_curve(dev: &Device, read: Read) -> Outcome {
    let got = loss_curve(dev, read).await.map_err(|e| format!("training/mlp_sgd: failed on {}: {e}", dev.name()))?;
    let exp = loss_curve(&reference_device(), read).await.map_err(|e| format!("training/mlp_sgd: failed on the reference: {e}"))?;
    // The run must actually learn, or matching curves would prove little.
    if exp[STEPS - 1].is_nan() || exp[STEPS - 1] >= 0.8 * exp[0] {
        return Err(format!("training/mlp_sgd: reference loss did not fall ({} -> {})", exp[0], exp[STEPS - 1]));
    }
    compare("training/mlp_sgd", "loss at step", &got, &exp, TRAINING_CURVE)
}

/// Loss after each of [`CNN_STEPS`] SGD steps of a tiny conv net (conv 3x3 → relu → 2x2 max
/// pool → linear) on 8 fixed random 1x8x8 images: the im2col / col2im / pooling gradient path
/// end to end.
pub async fn cnn_loss_curve(dev: &Device, read: Read) -> Result<Vec<f64>> {
    let (n, c) = (8, 3);
    let xv = Gen::Uniform(-1.0, 1.0).values(seed_of("training/cnn/x"), n * 64);
    let yv = Gen::Indices(c).values(seed_of("training/cnn/y"), n);
    let x = Tensor::from_f64(dev, &xv, [n, 1, 8, 8])?;
    let y = Tensor::from_f64(dev, &yv, [n])?;
    let k = Param::new(Tensor::rand_normal(dev, [4, 1, 3, 3], 0.0, 0.4, 21)?);
    let kb = Param::new(Tensor::rand_uniform(dev, [4], -0.1, 0.1, 22)?);
    let w = Param::new(Tensor::rand_normal(dev, [4 * 16, c], 0.0, 0.2, 23)?);
    let params = [&k, &kb, &w];
    let lr = 0.2;
    let mut losses = Vec::with_capacity(CNN_STEPS);
    for _ in 0..CNN_STEPS {
        for p in params {
            p.zero_grad();
        }
        let h = conv2d(&x, &k.tensor(), Some(&kb.tensor()), 1, 1)?.relu()?; // [n, 4, 8, 8]
        let h = max_pool2d(&h, 2, 2, 0)?.reshape([n, 4 * 16])?; // [n, 64]
        let loss = cross_entropy(&h.matmul(&w.tensor())?, &y)?;
        loss.backward()?;
        losses.push(first(read_f64(&loss, read).await?)?);
        let _g = no_grad();
        for p in params {
            if let Some(g) = p.grad() {
                p.set(&p.tensor().sub(&g.mul_scalar(lr)?)?)?;
            }
        }
    }
    Ok(losses)
}

/// Number of SGD steps of the conv-net curve.
pub const CNN_STEPS: usize = 20;

pub async fn training_curve_cnn(dev: &Device, read: Read) -> Outcome {
    let got = cnn_loss_curve(dev, read).await.map_err(|e| format!("training/cnn_sgd: failed on {}: {e}", dev.name()))?;
    let exp = cnn_loss_curve(&reference_device(), read).await.map_err(|e| format!("training/cnn_sgd: failed on the reference: {e}"))?;
    if exp[CNN_STEPS - 1].is_nan() || exp[CNN_STEPS - 1] >= 0.8 * exp[0] {
        return Err(format!("training/cnn_sgd: reference loss did not fall ({} -> {})", exp[0], exp[CNN_STEPS - 1]));
    }
    compare("training/cnn_sgd", "loss at step", &got, &exp, TRAINING_CURVE)
}
