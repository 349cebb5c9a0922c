//! The RGBA16F fallback: forced by options, the self-test reports its larger error, and a tiny
//! MLP trained with core ops still reduces its loss.

use pixelgrad_core::composite::mse;
use pixelgrad_core::{Device, Param, Result, Tensor};
use pixelgrad_webgl::{TexelFormat, WebGlBackend, WebGlOptions};

/// A few dozen SGD steps of a 6-8-1 sigmoid MLP on a fixed regression task; returns the losses.
fn train_tiny_mlp(dev: &Device) -> Result<Vec<f32>> {
    let n = 16;
    let x: Vec<f32> = (0..n * 6).map(|i| ((i * 37 % 17) as f32 / 8.0) - 1.0).collect();
    let y: Vec<f32> = (0..n).map(|r| if x[r * 6] + x[r * 6 + 1] > 0.0 { 0.9 } else { 0.1 }).collect();
    let x = Tensor::from_vec(dev, &x, [n, 6])?;
    let y = Tensor::from_vec(dev, &y, [n, 1])?;
    let w1 = Param::new(Tensor::rand_uniform(dev, [6, 8], -0.8, 0.8, 1)?);
    let b1 = Param::new(Tensor::zeros(dev, [8])?);
    let w2 = Param::new(Tensor::rand_uniform(dev, [8, 1], -0.8, 0.8, 2)?);
    let b2 = Param::new(Tensor::zeros(dev, [1])?);
    let params = [&w1, &b1, &w2, &b2];
    let mut losses = Vec::new();
    for _ in 0..40 {
        let h = x.matmul(&w1.tensor())?.add(&b1.tensor())?.sigmoid()?;
        let p = h.matmul(&w2.tensor())?.add(&b2.tensor())?.sigmoid()?;
        let loss = mse(&p, &y)?;
        loss.backward()?;
        losses.push(loss.item()?);
        for q in params {
            if let Some(g) = q.grad() {
                // A new texture per step: the old value stays bound as input (ping-pong).
                q.set(&q.tensor().detach().sub(&g.mul_scalar(2.0)?)?)?;
            }
            q.zero_grad();
        }
    }
    Ok(losses)
}

#[test]
fn forced_half_float_reports_larger_error_and_still_trains() {
    let full = WebGlBackend::new_headless(WebGlOptions::default()).unwrap();
    let half = WebGlBackend::new_headless(WebGlOptions { force_half_float: true, ..Default::default() }).unwrap();
    let (rf, rh) = (full.report(), half.report());
    assert_eq!(rf.format, TexelFormat::Rgba32F);
    assert_eq!(rh.format, TexelFormat::Rgba16F);
    assert!(rh.warnings.iter().any(|w| w.contains("RGBA16F")), "{:?}", rh.warnings);
    assert!(half.self_test_name_hint().contains("RGBA16F"));
    let (ef, eh) = (rf.self_test.unwrap().max_rel_error, rh.self_test.unwrap().max_rel_error);
    eprintln!("self-test max relative error: RGBA32F {ef:.3e}, RGBA16F {eh:.3e}");
    assert!(ef < 1e-5, "RGBA32F self-test error {ef}");
    assert!(eh > 10.0 * ef && eh > 1e-4, "RGBA16F should be visibly less precise: {eh} vs {ef}");
    assert!(eh < 0.05, "RGBA16F error {eh} is too large to train with");

    let lf = train_tiny_mlp(&Device::new(full)).unwrap();
    let lh = train_tiny_mlp(&Device::new(half)).unwrap();
    eprintln!("RGBA32F losses {:.4} -> {:.4}", lf[0], lf[lf.len() - 1]);
    eprintln!("RGBA16F losses {:.4} -> {:.4}", lh[0], lh[lh.len() - 1]);
    assert!(lf[lf.len() - 1] < 0.7 * lf[0]);
    assert!(lh[lh.len() - 1] < 0.7 * lh[0], "half precision training did not reduce the loss: {lh:?}");
}

trait NameHint {
    fn self_test_name_hint(&self) -> String;
}
impl NameHint for WebGlBackend {
    fn self_test_name_hint(&self) -> String {
        pixelgrad_core::Backend::name(self)
    }
}

/// The precision-limited mode the browser's `init({ precision: 'low' })` selects: RGBA16F
/// storage and mediump fragment shaders. Every program still compiles (mediump applies to
/// floats only; indices stay highp int), the report says so, and training reduces the loss.
#[test]
fn mediump_with_half_float_compiles_reports_and_trains() {
    let low = WebGlBackend::new_headless(WebGlOptions { force_half_float: true, mediump: true, ..Default::default() }).unwrap();
    let r = low.report();
    assert_eq!(r.format, TexelFormat::Rgba16F);
    assert!(r.warnings.iter().any(|w| w.contains("mediump forced")), "{:?}", r.warnings);
    let e = r.self_test.unwrap().max_rel_error;
    eprintln!("RGBA16F + mediump self-test max relative error {e:.3e}");
    assert!(e < 0.05, "self-test error {e}");
    let l = train_tiny_mlp(&Device::new(low)).unwrap();
    eprintln!("RGBA16F + mediump losses {:.4} -> {:.4}", l[0], l[l.len() - 1]);
    assert!(l[l.len() - 1] < 0.7 * l[0], "training did not reduce the loss: {l:?}");
}
