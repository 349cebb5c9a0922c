//! The smoke workloads, identical on every backend: a few matmuls and one SGD step of a small
//! MLP. Inputs come from the host (a fixed formula), weights from the model presets' seeded
//! initialisation (Philox on the device, which every backend implements bit-for-bit), so the
//! CPU run in the same page is an exact reference up to floating-point summation order.
//!
//! Every read goes through `to_vec_async`: WebGPU in the browser cannot block on a readback.

use pixelgrad_core::{Device, Param, Result, Tensor};
use pixelgrad_nn::optim::Sgd;
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::{Mode, Module, Optimizer, Sequential};

use crate::compare::{check_close, Tolerance};

/// Deterministic values in `[-1, 1)`, different for each `salt` (no RNG crate, no device RNG:
/// the inputs must not depend on any backend).
pub fn host_values(n: usize, salt: u32) -> Vec<f32> {
    let mut state = 0x9E37_79B9u32 ^ salt.wrapping_mul(0x85EB_CA6B);
    (0..n)
        .map(|_| {
            // xorshift32: cheap, reproducible, well spread.
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// One matmul shape `[m, k] x [k, n]`, optionally with a transposed operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulCase {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub trans_a: bool,
    pub trans_b: bool,
}

/// Odd sizes (no tile divides them), a square power of two and a transposed case.
pub const MATMUL_CASES: [MatmulCase; 3] = [
    MatmulCase { m: 33, k: 47, n: 29, trans_a: false, trans_b: false },
    MatmulCase { m: 64, k: 64, n: 64, trans_a: false, trans_b: false },
    MatmulCase { m: 17, k: 40, n: 23, trans_a: true, trans_b: true },
];

/// Runs one matmul case on `dev` and reads the `[m, n]` result.
pub async fn matmul(dev: &Device, case: MatmulCase) -> Result<Vec<f32>> {
    let MatmulCase { m, k, n, trans_a, trans_b } = case;
    let a_shape = if trans_a { [k, m] } else { [m, k] };
    let b_shape = if trans_b { [n, k] } else { [k, n] };
    let a = Tensor::from_vec(dev, &host_values(m * k, 1), a_shape)?;
    let b = Tensor::from_vec(dev, &host_values(k * n, 2), b_shape)?;
    let c = a.matmul_t(&b, trans_a, trans_b)?;
    c.to_vec_async().await
}

/// A model, its data and the optimizer settings for one training step.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainCase {
    pub name: &'static str,
    pub spec: ModelSpec,
    pub batch: usize,
    pub lr: f32,
    pub seed: u64,
}

/// The seed article's 48-64-2 sigmoid network with MSE (batch 4), the `mlp` preset
/// (16 → 256 ReLU → 4 logits, cross-entropy, batch 8), which exercises max/exp/log/gather, and
/// a small `cnn` (im2col/col2im, max pooling): together most kernels get compiled by the
/// browser's own shader compiler, which is stricter than naga or native GL drivers.
pub fn train_cases() -> Vec<TrainCase> {
    vec![
        TrainCase {
            name: "seed-mlp 48-64-2 sigmoid, MSE",
            spec: ModelSpec { preset: Preset::SeedMlp, input: [1, 8, 6], classes: 2 },
            batch: 4,
            lr: 0.5,
            seed: 48,
        },
        TrainCase {
            name: "mlp 16-256-4 relu, cross-entropy",
            spec: ModelSpec { preset: Preset::Mlp, input: [1, 4, 4], classes: 4 },
            batch: 8,
            lr: 0.1,
            seed: 16,
        },
        TrainCase {
            name: "cnn conv3x3x16-pool-conv3x3x32-pool-dense on 8x8, cross-entropy",
            spec: ModelSpec { preset: Preset::Cnn, input: [1, 8, 8], classes: 3 },
            batch: 2,
            lr: 0.05,
            seed: 8,
        },
    ]
}

/// Everything one training step produced, read back to the host. Parameter lists are in the
/// model's visiting order, by name (`1.weight`, `1.bias`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutcome {
    pub initial: Vec<(String, Vec<f32>)>,
    pub output: Vec<f32>,
    pub loss: f32,
    pub grads: Vec<(String, Vec<f32>)>,
    pub updated: Vec<(String, Vec<f32>)>,
    /// The loss on the same batch after the update (forward only).
    pub loss_after: f32,
}

fn params(model: &Sequential) -> Vec<(String, Tensor)> {
    let mut out = Vec::new();
    model.visit_params(&mut |name, p: &Param| out.push((name.to_string(), p.tensor())));
    out
}

fn grads(model: &Sequential) -> Vec<(String, Option<Tensor>)> {
    let mut out = Vec::new();
    model.visit_params(&mut |name, p: &Param| out.push((name.to_string(), p.grad())));
    out
}

async fn read_all(list: Vec<(String, Tensor)>) -> Result<Vec<(String, Vec<f32>)>> {
    let mut out = Vec::with_capacity(list.len());
    for (name, t) in list {
        let v = t.to_vec_async().await?;
        out.push((name, v));
    }
    Ok(out)
}

async fn scalar(t: &Tensor) -> Result<f32> {
    let v = t.to_vec_async().await?;
    v.first().copied().ok_or_else(|| pixelgrad_core::Error::invalid("loss", "empty loss tensor".to_string()))
}

/// Builds the case's model on `dev`, runs forward, loss, backward and one plain SGD step, then
/// the loss again, and reads everything back.
pub async fn train_step(dev: &Device, case: &TrainCase) -> Result<StepOutcome> {
    let model = case.spec.build(dev, case.seed)?;
    let [c, h, w] = case.spec.input;
    let x = Tensor::from_vec(dev, &host_values(case.batch * c * h * w, 3), [case.batch, c, h, w])?;
    let labels: Vec<f32> = (0..case.batch).map(|i| (i % case.spec.classes) as f32).collect();
    let y = Tensor::from_vec(dev, &labels, [case.batch])?;
    let loss_fn = case.spec.preset.loss();

    let initial = params(&model);
    let out = model.forward(&x, Mode::Train)?;
    let loss = loss_fn.compute(&out, &y)?;
    loss.backward()?;
    let mut grad_tensors = Vec::new();
    for (name, g) in grads(&model) {
        let g = g.ok_or_else(|| pixelgrad_core::Error::Autodiff(format!("parameter {name} got no gradient")))?;
        grad_tensors.push((name, g));
    }
    Sgd::new(case.lr).step(&model)?;
    let updated = params(&model);
    let loss_after = {
        let _g = pixelgrad_core::no_grad();
        loss_fn.compute(&model.forward(&x, Mode::Eval)?, &y)?
    };

    Ok(StepOutcome {
        initial: read_all(initial).await?,
        output: out.to_vec_async().await?,
        loss: scalar(&loss).await?,
        grads: read_all(grad_tensors).await?,
        updated: read_all(updated).await?,
        loss_after: scalar(&loss_after).await?,
    })
}

/// Gradients can be tiny where terms cancel; compare them with an absolute floor scaled to the
/// tensor's largest element (a per-tensor relative error), elementwise otherwise.
fn scaled(tol: Tolerance, want: &[f32]) -> Tolerance {
    let max = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    Tolerance { rel: tol.rel, abs: tol.abs.max(tol.rel * max) }
}

fn check_list(
    errors: &mut Vec<String>,
    what: &str,
    got: &[(String, Vec<f32>)],
    want: &[(String, Vec<f32>)],
    tol: Tolerance,
    scale: bool,
) {
    if got.len() != want.len() {
        errors.push(format!("{what}: {} parameters but the reference has {}", got.len(), want.len()));
        return;
    }
    for ((gn, gv), (wn, wv)) in got.iter().zip(want) {
        if gn != wn {
            errors.push(format!("{what}: parameter {gn} where the reference has {wn}"));
            continue;
        }
        let t = if scale { scaled(tol, wv) } else { tol };
        if let Err(e) = check_close(&format!("{what} {gn}"), gv, wv, t) {
            errors.push(e);
        }
    }
}

/// Compares a step on a GPU backend against the CPU reference: initial weights, outputs, loss,
/// gradients, updated weights and the loss after the update. Returns every mismatch.
pub fn compare_steps(got: &StepOutcome, want: &StepOutcome, tol: Tolerance) -> std::result::Result<(), String> {
    let mut errors = Vec::new();
    check_list(&mut errors, "initial weight", &got.initial, &want.initial, tol, false);
    if let Err(e) = check_close("forward output", &got.output, &want.output, tol) {
        errors.push(e);
    }
    if let Err(e) = check_close("loss", &[got.loss], &[want.loss], tol) {
        errors.push(e);
    }
    check_list(&mut errors, "gradient", &got.grads, &want.grads, tol, true);
    check_list(&mut errors, "updated weight", &got.updated, &want.updated, tol, false);
    if let Err(e) = check_close("loss after the step", &[got.loss_after], &[want.loss_after], tol) {
        errors.push(e);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// Largest `|updated - initial|` over all parameters: proof that the step changed something.
pub fn max_update(step: &StepOutcome) -> f32 {
    step.initial
        .iter()
        .zip(&step.updated)
        .flat_map(|((_, a), (_, b))| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .fold(0.0, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_cpu::CpuBackend;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// The CPU backend's reads complete immediately; a no-op waker is enough to drive them.
    fn ready<T>(f: impl Future<Output = T>) -> T {
        let mut f = pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    #[test]
    fn host_values_are_spread_and_reproducible() {
        let a = host_values(1000, 1);
        assert_eq!(a, host_values(1000, 1));
        assert_ne!(a, host_values(1000, 2));
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let mean = a.iter().sum::<f32>() / 1000.0;
        assert!(mean.abs() < 0.1, "{mean}");
    }

    #[test]
    fn matmul_matches_plain_loops_on_cpu() {
        let dev = Device::new(CpuBackend::new());
        for case in MATMUL_CASES {
            let got = ready(matmul(&dev, case)).unwrap();
            let (m, k, n) = (case.m, case.k, case.n);
            let a = host_values(m * k, 1);
            let b = host_values(k * n, 2);
            let mut want = vec![0.0f32; m * n];
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0f64;
                    for p in 0..k {
                        let av = if case.trans_a { a[p * m + i] } else { a[i * k + p] };
                        let bv = if case.trans_b { b[j * k + p] } else { b[p * n + j] };
                        s += av as f64 * bv as f64;
                    }
                    want[i * n + j] = s as f32;
                }
            }
            check_close("matmul", &got, &want, Tolerance::MATMUL).unwrap();
        }
    }

    #[test]
    fn train_step_is_deterministic_and_changes_weights_on_cpu() {
        for case in train_cases() {
            let a = ready(train_step(&Device::new(CpuBackend::new()), &case)).unwrap();
            let b = ready(train_step(&Device::new(CpuBackend::new()), &case)).unwrap();
            compare_steps(&a, &b, Tolerance::TRAIN).unwrap();
            assert!(max_update(&a) > 1e-4, "{}: the step did not move the weights", case.name);
            assert!(a.loss.is_finite() && a.loss_after < a.loss, "{}: {} -> {}", case.name, a.loss, a.loss_after);
            assert_eq!(a.grads.len(), a.initial.len());
        }
    }

    #[test]
    fn compare_steps_reports_a_wrong_weight() {
        let case = &train_cases()[0];
        let a = ready(train_step(&Device::new(CpuBackend::new()), case)).unwrap();
        let mut b = a.clone();
        b.updated[0].1[3] += 0.01;
        let err = compare_steps(&b, &a, Tolerance::TRAIN).unwrap_err();
        assert!(err.contains("updated weight") && err.contains("[3]"), "{err}");
    }
}
