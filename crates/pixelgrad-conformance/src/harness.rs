//! The comparison machinery: a [`Case`] is one op applied to seeded inputs; [`Case::check`]
//! runs it forward and backward on the backend under test and on the f64 reference, and
//! compares outputs and input gradients element by element.
//!
//! Everything that reads a result back is `async` and takes a [`Read`] mode, so one
//! implementation serves both the native (blocking) suite and the browser, where WebGPU cannot
//! block; the blocking entry points drive it with [`block_on_ready`].

use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use pixelgrad_core::{rng, BackendKind, Device, Error, Result, Shape, Tensor};
use pixelgrad_cpu::CpuBackend;

use crate::tolerance::{Tol, ELEMENTWISE, GRAD_FACTOR};

/// A fresh f64 reference device.
pub fn reference_device() -> Device {
    Device::new(CpuBackend::reference())
}

/// How the harness reads results back to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// `Tensor::to_vec_f64`: blocks until the device is done (native test runs).
    Blocking,
    /// `Tensor::to_vec_async` on GPU backends (the browser, where nothing may block); the CPU
    /// backends, whose reads never block, still read with `to_vec_f64` so that the f64
    /// reference keeps its full precision.
    Async,
}

/// Reads `t` to the host in double precision, the way `read` says.
pub async fn read_f64(t: &Tensor, read: Read) -> Result<Vec<f64>> {
    if read == Read::Blocking || t.device().kind() == BackendKind::Cpu {
        return t.to_vec_f64();
    }
    Ok(t.to_vec_async().await?.into_iter().map(f64::from).collect())
}

/// Polls `f` once with a no-op waker: `Some(value)` if it completed, `None` if it would have
/// to wait. With [`Read::Blocking`] every await in this crate completes at once, so this is
/// all the executor the native suite needs (and it cannot hang).
pub fn block_on_ready<T>(f: impl Future<Output = T>) -> Option<T> {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// The message used when a blocking run meets a read that would have to wait.
pub(crate) const PENDING: &str = "a read did not complete synchronously (use the async suite: Read::Async)";

/// [`block_on_ready`] for a family's outcome: a pending read becomes a failure message.
pub(crate) fn block_outcome(f: impl Future<Output = std::result::Result<(), String>>) -> std::result::Result<(), String> {
    block_on_ready(f).unwrap_or_else(|| Err(PENDING.to_string()))
}

/// [`block_on_ready`] for a core result: a pending read becomes [`Error::WouldBlock`].
pub(crate) fn block_result<T>(op: &'static str, dev: &Device, f: impl Future<Output = Result<T>>) -> Result<T> {
    block_on_ready(f).unwrap_or_else(|| Err(Error::WouldBlock { op, backend: dev.name(), msg: PENDING.to_string() }))
}

/// How the values of one input are drawn (deterministically, from the case's seed).
#[derive(Clone, Debug)]
pub enum Gen {
    /// Uniform in `[low, high)`.
    Uniform(f64, f64),
    /// Whole numbers in `0..n` (index tensors).
    Indices(usize),
    /// `0.0` or `1.0` with equal odds (masks, `where` conditions).
    Mask,
    /// Exactly these values.
    Values(Vec<f64>),
}

/// Deterministic seed from a string (FNV-1a), so every case draws its own fixed inputs.
pub fn seed_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

impl Gen {
    /// `n` values, each rounded to f32 so that both backends start from identical inputs.
    pub fn values(&self, seed: u64, n: usize) -> Vec<f64> {
        let u = |i: usize| rng::uniform(seed, i as u64) as f64;
        (0..n)
            .map(|i| match self {
                Gen::Uniform(lo, hi) => ((lo + (hi - lo) * u(i)) as f32) as f64,
                Gen::Indices(k) => ((u(i) * *k as f64).floor()).min(*k as f64 - 1.0).max(0.0),
                Gen::Mask => (u(i) < 0.5) as u8 as f64,
                Gen::Values(v) => v.get(i).copied().unwrap_or(0.0) as f32 as f64,
            })
            .collect()
    }
}

struct InputSpec {
    shape: Shape,
    values: Vec<f64>,
    differentiable: bool,
}

/// The op of a case: gets the device and the inputs on it, in the order they were added.
pub type CaseFn = Rc<dyn Fn(&Device, &[Tensor]) -> Result<Tensor>>;

/// One checked application of an op.
pub struct Case {
    pub family: &'static str,
    pub name: String,
    inputs: Vec<InputSpec>,
    f: CaseFn,
    pub tol: Tol,
    pub grad_tol: Tol,
    pub backward: bool,
}

/// What one device produced for a case.
struct Outcome {
    out: Vec<f64>,
    shape: Shape,
    grads: Vec<Option<Vec<f64>>>,
}

impl Case {
    /// A case with elementwise tolerances, checked forward and backward.
    pub fn new(family: &'static str, name: impl Into<String>, f: impl Fn(&Device, &[Tensor]) -> Result<Tensor> + 'static) -> Self {
        Case {
            family,
            name: name.into(),
            inputs: Vec::new(),
            f: Rc::new(f),
            tol: ELEMENTWISE,
            grad_tol: ELEMENTWISE.scaled(GRAD_FACTOR),
            backward: true,
        }
    }

    fn push(mut self, shape: impl Into<Shape>, gen: Gen, differentiable: bool) -> Self {
        let shape = shape.into();
        let seed = seed_of(&format!("{}/{}/{}", self.family, self.name, self.inputs.len()));
        let values = gen.values(seed, shape.numel());
        self.inputs.push(InputSpec { shape, values, differentiable });
        self
    }

    /// A differentiable input.
    pub fn input(self, shape: impl Into<Shape>, gen: Gen) -> Self {
        self.push(shape, gen, true)
    }

    /// A constant input (indices, masks): no gradient is checked for it.
    pub fn constant(self, shape: impl Into<Shape>, gen: Gen) -> Self {
        self.push(shape, gen, false)
    }

    /// Forward tolerance; the gradient tolerance becomes `t` times [`GRAD_FACTOR`].
    pub fn tol(mut self, t: Tol) -> Self {
        self.tol = t;
        self.grad_tol = t.scaled(GRAD_FACTOR);
        self
    }

    pub fn grad_tol(mut self, t: Tol) -> Self {
        self.grad_tol = t;
        self
    }

    /// Only the forward output is compared (non-differentiable ops).
    pub fn forward_only(mut self) -> Self {
        self.backward = false;
        self
    }

    async fn run(&self, dev: &Device, read: Read) -> Result<Outcome> {
        let mut xs = Vec::with_capacity(self.inputs.len());
        for s in &self.inputs {
            let t = Tensor::from_f64(dev, &s.values, s.shape.clone())?;
            xs.push(if self.backward && s.differentiable { t.with_grad() } else { t });
        }
        let y = (self.f)(dev, &xs)?;
        let out = read_f64(&y, read).await?;
        let mut grads = vec![None; xs.len()];
        if self.backward && y.requires_grad() {
            // loss = sum(y * r) with a fixed random r, so every output element matters with
            // its own weight.
            let r = Gen::Uniform(-1.0, 1.0).values(seed_of(&format!("{}/{}/r", self.family, self.name)), y.numel());
            let r = Tensor::from_f64(dev, &r, y.shape().clone())?;
            y.mul(&r)?.sum_all()?.backward()?;
            for (g, x) in grads.iter_mut().zip(&xs) {
                if let Some(t) = x.grad() {
                    *g = Some(read_f64(&t, read).await?);
                }
            }
        }
        Ok(Outcome { out, shape: y.shape().clone(), grads })
    }

    /// Runs the case on `dev` and on the f64 reference and compares. The error names the
    /// family, the case, the first bad index, the values and the tolerance.
    pub fn check(&self, dev: &Device) -> std::result::Result<(), String> {
        block_outcome(self.check_with(dev, Read::Blocking))
    }

    /// [`Case::check`], reading results back as `read` says (use [`Read::Async`] in the browser).
    pub async fn check_with(&self, dev: &Device, read: Read) -> std::result::Result<(), String> {
        let tag = format!("{}/{}", self.family, self.name);
        let got = self.run(dev, read).await.map_err(|e| format!("{tag}: failed on {}: {e}", dev.name()))?;
        let exp = self.run(&reference_device(), read).await.map_err(|e| format!("{tag}: failed on the reference: {e}"))?;
        if got.shape != exp.shape {
            return Err(format!("{tag}: output shape {} but the reference gives {}", got.shape, exp.shape));
        }
        compare(&tag, "output", &got.out, &exp.out, self.tol)?;
        for (i, (g, e)) in got.grads.iter().zip(&exp.grads).enumerate() {
            match (g, e) {
                (Some(g), Some(e)) => compare(&tag, &format!("grad of input {i}"), g, e, self.grad_tol)?,
                (None, None) => {}
                (g, _) => {
                    return Err(format!(
                        "{tag}: grad of input {i} is {} on {} but {} on the reference",
                        if g.is_some() { "present" } else { "missing" },
                        dev.name(),
                        if g.is_some() { "missing" } else { "present" }
                    ))
                }
            }
        }
        Ok(())
    }
}

/// Element-by-element comparison; the message names the first bad index and counts the rest.
pub fn compare(tag: &str, what: &str, got: &[f64], expected: &[f64], tol: Tol) -> std::result::Result<(), String> {
    if got.len() != expected.len() {
        return Err(format!("{tag}: {what} has {} elements, expected {}", got.len(), expected.len()));
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !tol.accepts(got[i], expected[i])).collect();
    if let Some(&i) = bad.first() {
        return Err(format!(
            "{tag}: {what}[{i}] got {} expected {} (|diff| {:.3e} > {:.3e} = abs {:.1e} + rel {:.1e}); {} of {} elements out of tolerance",
            got[i],
            expected[i],
            (got[i] - expected[i]).abs(),
            tol.bound(expected[i]),
            tol.abs,
            tol.rel,
            bad.len(),
            got.len()
        ));
    }
    Ok(())
}

/// Checks every case, collecting all failures (one line each).
pub fn check_all(dev: &Device, cases: &[Case]) -> std::result::Result<(), String> {
    block_outcome(check_all_with(dev, cases, Read::Blocking))
}

/// [`check_all`], reading results back as `read` says.
pub async fn check_all_with(dev: &Device, cases: &[Case], read: Read) -> std::result::Result<(), String> {
    let mut errs = Vec::new();
    for c in cases {
        if let Err(e) = c.check_with(dev, read).await {
            errs.push(e);
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of {} cases failed:\n  {}", errs.len(), cases.len(), errs.join("\n  ")))
    }
}
