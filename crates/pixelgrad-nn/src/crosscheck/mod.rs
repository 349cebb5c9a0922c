//! Cross-check: the WebGL article's debugging habit as a user tool. A tiny fully connected
//! network (the article's: sigmoid layers, MSE loss, plain SGD) trains for a few steps with the
//! same seeded weights and data on the backend under test and on the f64 CPU reference; every
//! intermediate of every step is read back and compared element by element: each layer's
//! pre-activation and activation, the loss, the gradient reaching each hidden activation,
//! every parameter gradient and every updated parameter. The first tensor outside its
//! tolerance is reported with the op that produced it.
//!
//! Used by `pixelgrad check` (native) and `rt.crossCheck()` (JS), one implementation for both.
//! The reference device is the caller's (`CpuBackend::reference()`): this crate does not pick
//! backends.
//!
//! ```
//! use pixelgrad_core::Device;
//! use pixelgrad_cpu::CpuBackend;
//! use pixelgrad_nn::crosscheck::{self, CheckConfig};
//! # fn main() -> pixelgrad_core::Result<()> {
//! let subject = Device::new(CpuBackend::new());
//! let reference = Device::new(CpuBackend::reference());
//! let report = crosscheck::run(&CheckConfig::default(), &subject, &reference)?;
//! assert!(report.passed(), "{}", report.table());
//! # Ok(()) }
//! ```

mod fault;
mod report;

pub use fault::{op_label, with_fault, Fault, FaultyBackend};
pub use report::{CheckReport, TensorCheck};

use pixelgrad_core::{no_grad, rng, Device, Error, Param, Result, Tensor};

/// Activation of every layer of the checked network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CheckActivation {
    #[default]
    Sigmoid,
    Tanh,
    Relu,
}

impl CheckActivation {
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "sigmoid" => Ok(CheckActivation::Sigmoid),
            "tanh" => Ok(CheckActivation::Tanh),
            "relu" => Ok(CheckActivation::Relu),
            other => Err(Error::invalid("cross-check", format!("unknown activation '{other}' (sigmoid, tanh, relu)"))),
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            CheckActivation::Sigmoid => "sigmoid",
            CheckActivation::Tanh => "tanh",
            CheckActivation::Relu => "relu",
        }
    }
    fn apply(&self, z: &Tensor) -> Result<Tensor> {
        match self {
            CheckActivation::Sigmoid => z.sigmoid(),
            CheckActivation::Tanh => z.tanh(),
            CheckActivation::Relu => z.max_scalar(0.0),
        }
    }
}

/// The checked network and its run.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckConfig {
    /// Layer widths, input first: `[4, 4, 2]` is 4 inputs, a hidden layer of 4, 2 outputs.
    pub layers: Vec<usize>,
    pub activation: CheckActivation,
    /// Training steps (each compared in full).
    pub steps: usize,
    pub batch: usize,
    /// SGD learning rate.
    pub lr: f32,
    /// Seed of the weights and the data.
    pub seed: u64,
    /// Multiplies every tolerance (see [`tolerance`]).
    pub tolerance_scale: f64,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            layers: vec![4, 4, 2],
            activation: CheckActivation::Sigmoid,
            steps: 3,
            batch: 8,
            lr: 0.5,
            seed: 1,
            tolerance_scale: 1.0,
        }
    }
}

impl CheckConfig {
    fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid("cross-check", m.to_string()));
        if self.layers.len() < 2 || self.layers.iter().any(|&w| w == 0 || w > 4096) {
            return bad("layers needs at least two widths between 1 and 4096 (input and output), e.g. 4,4,2");
        }
        if self.steps == 0 || self.steps > 1000 || self.batch == 0 || self.batch > 4096 {
            return bad("steps must be 1..=1000 and batch 1..=4096");
        }
        if !(self.lr.is_finite() && self.tolerance_scale.is_finite() && self.tolerance_scale > 0.0) {
            return bad("lr must be finite and the tolerance scale positive");
        }
        Ok(())
    }
}

/// Absolute and relative tolerance of one compared tensor: `|got - want| <= abs + rel * |want|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub rel: f64,
    pub abs: f64,
}

/// The tolerance of a tensor that sums `k` terms per element, `backward` for gradients and
/// updates, at `step` (0-based): f32 rounding grows like sqrt(k) in a sum, a backward pass
/// chains a few more roundings (x4), and each step starts from the last step's differences
/// (x(1 + step)). The base (1e-4 relative, 1e-5 absolute) is the conformance suite's for
/// composites.
pub fn tolerance(k: usize, backward: bool, step: usize, scale: f64) -> Tolerance {
    let f = (k.max(1) as f64).sqrt() * if backward { 4.0 } else { 1.0 } * (1 + step) as f64 * scale;
    Tolerance { rel: 1e-4 * f, abs: 1e-5 * f }
}

/// One tensor of a step, with its name, the op that produced it and its tolerance.
pub struct Captured {
    pub name: String,
    pub op: &'static str,
    pub tol: Tolerance,
    pub tensor: Tensor,
}

/// Weights, biases and data of one side (subject or reference).
struct Side {
    params: Vec<(Param, Param)>,
    x: Tensor,
    y: Tensor,
}

impl Side {
    fn new(dev: &Device, host: &Host) -> Result<Side> {
        let mut params = Vec::new();
        for (l, (w, b)) in host.params.iter().enumerate() {
            let (fi, fo) = (host.layers[l], host.layers[l + 1]);
            params.push((Param::new(Tensor::from_vec(dev, w, [fi, fo])?), Param::new(Tensor::from_vec(dev, b, [fo])?)));
        }
        let n0 = host.layers[0];
        let nl = *host.layers.last().unwrap_or(&1);
        Ok(Side { params, x: Tensor::from_vec(dev, &host.x, [host.batch, n0])?, y: Tensor::from_vec(dev, &host.y, [host.batch, nl])? })
    }

    /// One SGD step, returning every intermediate in computation order.
    fn step(&self, cfg: &CheckConfig, step: usize) -> Result<Vec<Captured>> {
        let s = cfg.tolerance_scale;
        let nl = self.params.len();
        let mut out = Vec::new();
        // Each layer's input is a leaf (the first is the data), so the gradient reaching every
        // hidden activation can be read: backward runs stage by stage, last layer first.
        let mut ins: Vec<Tensor> = vec![self.x.clone()];
        let mut acts = Vec::new();
        for (l, (w, b)) in self.params.iter().enumerate() {
            let fan_in = w.shape().0[0];
            let z = ins[l].matmul(&w.tensor())?.add(&b.tensor())?;
            out.push(Captured {
                name: format!("layer{}.pre", l + 1),
                op: "matmul + bias add",
                tol: tolerance(fan_in, false, step, s),
                tensor: z.detach(),
            });
            let a = cfg.activation.apply(&z)?;
            out.push(Captured {
                name: format!("layer{}.act", l + 1),
                op: cfg.activation.as_str(),
                tol: tolerance(fan_in, false, step, s),
                tensor: a.detach(),
            });
            if l + 1 < nl {
                ins.push(a.detach().with_grad());
            }
            acts.push(a);
        }
        let last = acts.last().ok_or_else(|| Error::invalid("cross-check", "no layers"))?;
        let outputs = last.dims()[1];
        let loss = last.sub(&self.y)?.square()?.mean_all()?;
        out.push(Captured {
            name: "loss".into(),
            op: "mse loss (sub, square, mean)",
            tol: tolerance(cfg.batch * outputs, false, step, s),
            tensor: loss.detach(),
        });
        loss.backward()?;
        for l in (0..nl).rev() {
            if l + 1 < nl {
                // ins[l + 1] is layer l's activation as a leaf: its gradient came from layer l + 1.
                let g = ins[l + 1].grad().ok_or_else(|| Error::Autodiff(format!("cross-check: no gradient reached layer{}.act", l + 1)))?;
                let fan_out = self.params[l + 1].0.shape().0[1];
                out.push(Captured {
                    name: format!("layer{}.act.grad", l + 1),
                    op: "backward matmul (dz · Wᵀ)",
                    tol: tolerance(fan_out, true, step, s),
                    tensor: g.clone(),
                });
                acts[l].mul(&g)?.sum_all()?.backward()?;
            }
        }
        for (l, (w, b)) in self.params.iter().enumerate() {
            let gw = w.grad().ok_or_else(|| Error::Autodiff(format!("cross-check: no gradient for layer{}.weight", l + 1)))?;
            let gb = b.grad().ok_or_else(|| Error::Autodiff(format!("cross-check: no gradient for layer{}.bias", l + 1)))?;
            out.push(Captured {
                name: format!("layer{}.weight.grad", l + 1),
                op: "backward matmul (xᵀ · dz)",
                tol: tolerance(cfg.batch, true, step, s),
                tensor: gw,
            });
            out.push(Captured {
                name: format!("layer{}.bias.grad", l + 1),
                op: "backward reduce (sum over batch)",
                tol: tolerance(cfg.batch, true, step, s),
                tensor: gb,
            });
        }
        let _g = no_grad();
        for (l, (w, b)) in self.params.iter().enumerate() {
            for (p, what) in [(w, "weight"), (b, "bias")] {
                let g = p.grad().ok_or_else(|| Error::Autodiff("cross-check: gradient vanished".into()))?;
                let next = p.tensor().sub(&g.mul_scalar(cfg.lr)?)?;
                p.set(&next)?;
                p.zero_grad();
                out.push(Captured {
                    name: format!("layer{}.{what}", l + 1),
                    op: "sgd update (p - lr·g)",
                    tol: tolerance(cfg.batch, true, step, s),
                    tensor: next.detach(),
                });
            }
        }
        Ok(out)
    }
}

/// The seeded host values both sides start from.
struct Host {
    layers: Vec<usize>,
    batch: usize,
    params: Vec<(Vec<f32>, Vec<f32>)>,
    x: Vec<f32>,
    y: Vec<f32>,
}

impl Host {
    fn new(cfg: &CheckConfig) -> Host {
        let mut params = Vec::new();
        for l in 0..cfg.layers.len() - 1 {
            let (fi, fo) = (cfg.layers[l], cfg.layers[l + 1]);
            let a = (6.0 / (fi + fo) as f32).sqrt();
            let sw = rng::mix(cfg.seed, 2 * l as u64 + 10);
            let sb = rng::mix(cfg.seed, 2 * l as u64 + 11);
            let w = (0..fi * fo).map(|i| -a + 2.0 * a * rng::uniform(sw, i as u64)).collect();
            // small non-zero biases, so their gradients and updates show up in the table
            let b = (0..fo).map(|i| -0.1 + 0.2 * rng::uniform(sb, i as u64)).collect();
            params.push((w, b));
        }
        let (n0, nl) = (cfg.layers[0], cfg.layers[cfg.layers.len() - 1]);
        let x = (0..cfg.batch * n0).map(|i| rng::uniform(rng::mix(cfg.seed, 1), i as u64)).collect();
        let y = (0..cfg.batch * nl).map(|i| rng::uniform(rng::mix(cfg.seed, 2), i as u64)).collect();
        Host { layers: cfg.layers.clone(), batch: cfg.batch, params, x, y }
    }
}

/// A cross-check in progress: [`CrossCheck::step`] runs one step on both devices and hands
/// back the pairs to read; [`CrossCheck::compare`] records a pair's values. [`run`] (blocking)
/// and [`run_async`] drive it.
pub struct CrossCheck {
    cfg: CheckConfig,
    subject: Side,
    reference: Side,
    report: CheckReport,
    step: usize,
}

impl CrossCheck {
    pub fn new(cfg: &CheckConfig, subject: &Device, reference: &Device) -> Result<CrossCheck> {
        cfg.validate()?;
        let host = Host::new(cfg);
        Ok(CrossCheck {
            cfg: cfg.clone(),
            subject: Side::new(subject, &host)?,
            reference: Side::new(reference, &host)?,
            report: CheckReport::new(cfg, subject.name(), reference.name()),
            step: 0,
        })
    }

    /// Steps still to run.
    pub fn remaining(&self) -> usize {
        self.cfg.steps - self.step
    }

    /// Runs the next step on both devices: `(subject, reference)` captures, same order.
    pub fn step(&mut self) -> Result<Vec<(Captured, Captured)>> {
        let s = self.step;
        let a = self.subject.step(&self.cfg, s)?;
        let b = self.reference.step(&self.cfg, s)?;
        self.step += 1;
        Ok(a.into_iter().zip(b).collect())
    }

    /// Records one compared tensor of the last step: `got` from the subject, `want` from the
    /// reference.
    pub fn compare(&mut self, c: &Captured, got: &[f32], want: &[f64]) {
        self.report.push(self.step - 1, c, got, want);
    }

    pub fn finish(self) -> CheckReport {
        self.report
    }
}

/// Runs the whole check, reading back with blocking reads (native).
pub fn run(cfg: &CheckConfig, subject: &Device, reference: &Device) -> Result<CheckReport> {
    let mut cc = CrossCheck::new(cfg, subject, reference)?;
    while cc.remaining() > 0 {
        for (a, b) in cc.step()? {
            let got = a.tensor.to_vec()?;
            let want = b.tensor.to_vec_f64()?;
            cc.compare(&a, &got, &want);
        }
    }
    Ok(cc.finish())
}

/// Runs the whole check, reading the subject back asynchronously (GPU backends in a browser);
/// the reference must be a CPU device (it is read with blocking reads).
pub async fn run_async(cfg: &CheckConfig, subject: &Device, reference: &Device) -> Result<CheckReport> {
    let mut cc = CrossCheck::new(cfg, subject, reference)?;
    while cc.remaining() > 0 {
        for (a, b) in cc.step()? {
            let got = a.tensor.to_vec_async().await?;
            let want = b.tensor.to_vec_f64()?;
            cc.compare(&a, &got, &want);
        }
    }
    Ok(cc.finish())
}
