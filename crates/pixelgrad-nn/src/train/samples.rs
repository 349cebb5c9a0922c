//! Host-side samples and their targets, batched onto a device; the seeded batch order.

use pixelgrad_core::{no_grad, rng, Device, Error, Result, Tensor};

use crate::loss::TargetKind;
use crate::{Loss, Mode, Module};

/// What each sample is compared with.
#[derive(Clone, Copy, Debug)]
pub enum Targets<'a> {
    /// One class index per sample.
    Classes(&'a [u32]),
    /// `shape` floats per sample, contiguous: one-hot or probability rows for cross-entropy,
    /// any values for MSE, 0/1 for BCE. Used as given.
    Values { values: &'a [f32], shape: &'a [usize] },
}

/// Samples: `x` holds `len()` samples of `sample_shape` each, contiguous, and their targets
/// (host values); or, made by [`Samples::on_device`], the samples are the rows of a device
/// tensor (`x` is then empty) and batches are gathered on the device.
#[derive(Clone, Copy, Debug)]
pub struct Samples<'a> {
    pub x: &'a [f32],
    pub sample_shape: &'a [usize],
    pub targets: Targets<'a>,
    n: usize,
    rows: Option<&'a Tensor>,
}

impl<'a> Samples<'a> {
    /// Samples with class indices as targets.
    pub fn new(x: &'a [f32], sample_shape: &'a [usize], labels: &'a [u32]) -> Result<Self> {
        Self::check_x(x, sample_shape, labels.len())?;
        Ok(Samples { x, sample_shape, targets: Targets::Classes(labels), n: labels.len(), rows: None })
    }

    /// Samples with float targets of `target_shape` each (`values.len()` is a whole number of
    /// them, and gives the sample count).
    pub fn with_values(x: &'a [f32], sample_shape: &'a [usize], values: &'a [f32], target_shape: &'a [usize]) -> Result<Self> {
        let per: usize = target_shape.iter().product();
        if per == 0 || !values.len().is_multiple_of(per) {
            return Err(Error::invalid(
                "samples",
                format!("{} target values are not a whole number of targets of shape {target_shape:?}", values.len()),
            ));
        }
        let n = values.len() / per;
        Self::check_x(x, sample_shape, n)?;
        Ok(Samples { x, sample_shape, targets: Targets::Values { values, shape: target_shape }, n, rows: None })
    }

    /// The rows of `x` (`[N, ..sample]`, on the device: never read back) with `targets` (for
    /// `N` samples): each batch is gathered from `x` on the device.
    pub fn on_device(x: &'a Tensor, targets: Targets<'a>) -> Result<Self> {
        let n = match targets {
            Targets::Classes(labels) => labels.len(),
            Targets::Values { values, shape } => {
                let per: usize = shape.iter().product();
                if per == 0 || !values.len().is_multiple_of(per) {
                    return Err(Error::invalid(
                        "samples",
                        format!("{} target values are not a whole number of targets of shape {shape:?}", values.len()),
                    ));
                }
                values.len() / per
            }
        };
        let dims = x.dims();
        if dims.len() < 2 || dims[0] != n || dims[1..].iter().product::<usize>() == 0 {
            return Err(Error::invalid("samples", format!("x of shape {dims:?} does not hold {n} samples [N, ..sample]")));
        }
        Ok(Samples { x: &[], sample_shape: &dims[1..], targets, n, rows: Some(x) })
    }

    fn check_x(x: &[f32], sample_shape: &[usize], n: usize) -> Result<()> {
        let per: usize = sample_shape.iter().product();
        if per == 0 || x.len() != per * n {
            return Err(Error::invalid("samples", format!("{} values do not hold {n} samples of shape {sample_shape:?}", x.len())));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    fn per_sample(&self) -> usize {
        self.sample_shape.iter().product()
    }
    /// What the targets are, for [`Loss::check`].
    pub fn kind(&self) -> TargetKind<'a> {
        match self.targets {
            Targets::Classes(_) => TargetKind::Classes,
            Targets::Values { shape, .. } => TargetKind::Values(shape),
        }
    }
    /// Checks the targets against a model whose output per sample is `output` under `loss`
    /// (shapes, and class indices below the number of classes): a typed error before any
    /// training step, naming the sample.
    pub fn check(&self, op: &'static str, loss: Loss, output: &[usize], backend: &str) -> Result<()> {
        loss.check(op, output, self.kind()).map_err(|e| e.with_backend(backend))?;
        if let (Targets::Classes(labels), [classes]) = (self.targets, output) {
            if let Some((i, c)) = labels.iter().enumerate().find(|(_, c)| **c as usize >= *classes) {
                return Err(Error::invalid(
                    op,
                    format!("label {c} of sample {i} is not a class index in 0..{classes} (the model has {classes} outputs)"),
                ));
            }
        }
        Ok(())
    }
    /// Uploads the samples at `idx` as `(x [B, ..sample_shape], targets)`: class indices `[B]`
    /// or float targets `[B, ..target_shape]`.
    pub fn batch(&self, dev: &Device, idx: &[usize]) -> Result<(Tensor, Tensor)> {
        let per = self.per_sample();
        let mut shape = vec![idx.len()];
        shape.extend_from_slice(self.sample_shape);
        let xb = match self.rows {
            Some(x) => gather_rows(dev, x, idx, per, shape)?,
            None => {
                let mut xb = Vec::with_capacity(idx.len() * per);
                for &i in idx {
                    xb.extend_from_slice(&self.x[i * per..(i + 1) * per]);
                }
                Tensor::from_vec(dev, &xb, shape)?
            }
        };
        let y = match self.targets {
            Targets::Classes(labels) => {
                let yb: Vec<f32> = idx.iter().map(|&i| labels[i] as f32).collect();
                Tensor::from_vec(dev, &yb, [idx.len()])?
            }
            Targets::Values { values, shape: ts } => {
                let tp: usize = ts.iter().product();
                let mut yb = Vec::with_capacity(idx.len() * tp);
                for &i in idx {
                    yb.extend_from_slice(&values[i * tp..(i + 1) * tp]);
                }
                let mut s = vec![idx.len()];
                s.extend_from_slice(ts);
                Tensor::from_vec(dev, &yb, s)?
            }
        };
        Ok((xb, y))
    }
}

/// Rows `idx` of `x` (`[N, ..]`, `per` floats a row) gathered on `dev` into a batch of
/// `shape`, with no gradient (x is data). Indices go as f32 (exact below 2^24 rows).
fn gather_rows(dev: &Device, x: &Tensor, idx: &[usize], per: usize, shape: Vec<usize>) -> Result<Tensor> {
    let _g = no_grad();
    let n = x.dims()[0];
    let m = idx.len();
    let at: Vec<f32> = idx.iter().map(|&r| r as f32).collect();
    let at = Tensor::from_vec(dev, &at, vec![m, 1])?.broadcast_to(vec![m, per])?;
    x.reshape(vec![n, per])?.gather(0, &at)?.reshape(shape)
}

/// A seeded permutation of `0..n` (Fisher-Yates driven by the counter-based RNG).
pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let w = rng::words(seed, i as u64);
        let r = ((w[0] as u64) << 32 | w[1] as u64) % (i as u64 + 1);
        v.swap(i, r as usize);
    }
    v
}

/// The model's output shape for one sample (without the batch axis), found by running one
/// sample in evaluation mode.
pub fn output_shape(model: &dyn Module, dev: &Device, data: &Samples) -> Result<Vec<usize>> {
    let _g = no_grad();
    let (x, _) = data.batch(dev, &[0])?;
    Ok(model.forward(&x, Mode::Eval)?.dims()[1..].to_vec())
}
