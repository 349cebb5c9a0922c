//! The local side of a node: the [`Learner`] trait (a model with its data on a device) and
//! [`ModuleLearner`], any `pixelgrad_nn` module with a local training and test shard, trained
//! by `pixelgrad_nn::train::fit` (the CLI's loop) and evaluated by `train::evaluate`.

use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::train::{evaluate, fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{Loss, Module, OptimizerKind};

use crate::{FlowerError, Result};

/// Settings of one local training round, from the train config (keys `local-epochs`,
/// `batch-size`, `lr`, as this project's ServerApp sends them) or the node's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundConfig {
    pub server_round: u64,
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f32,
}

/// What local training reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitStats {
    pub examples: usize,
    pub loss: f64,
    pub accuracy: f64,
}

/// What local evaluation reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvalStats {
    pub examples: usize,
    pub loss: f64,
    pub accuracy: f64,
}

/// The local side: a model with its data, on a device.
#[allow(async_fn_in_trait)]
pub trait Learner {
    fn device(&self) -> &Device;
    /// Current parameter values, in the model's visiting order.
    fn params(&self) -> Vec<Tensor>;
    /// Replaces every parameter (shapes already checked against [`Learner::params`]).
    fn set_params(&mut self, values: &[Tensor]) -> Result<()>;
    /// Trains on the local training data (a fresh optimizer each round).
    async fn fit(&mut self, cfg: &RoundConfig) -> Result<FitStats>;
    /// Evaluates on the local test data.
    async fn evaluate(&mut self) -> Result<EvalStats>;
}

/// Host samples owned by a node: `x` holds `labels.len()` samples of `sample_shape`.
#[derive(Clone, Debug, Default)]
pub struct Shard {
    pub x: Vec<f32>,
    pub labels: Vec<u32>,
    pub sample_shape: Vec<usize>,
}

impl Shard {
    pub fn new(x: Vec<f32>, labels: Vec<u32>, sample_shape: Vec<usize>) -> Result<Self> {
        Samples::new(&x, &sample_shape, &labels).map_err(FlowerError::engine("data"))?;
        Ok(Shard {
            x,
            labels,
            sample_shape,
        })
    }
    /// The samples at `idx` of `x` / `labels` (`per` values each).
    pub fn select(
        x: &[f32],
        labels: &[u32],
        per: usize,
        idx: &[usize],
        sample_shape: &[usize],
    ) -> Result<Self> {
        let mut xs = Vec::with_capacity(idx.len() * per);
        let mut ls = Vec::with_capacity(idx.len());
        for &i in idx {
            let s = x
                .get(i * per..(i + 1) * per)
                .ok_or_else(|| FlowerError::Invalid(format!("sample index {i} out of range")))?;
            xs.extend_from_slice(s);
            ls.push(
                *labels
                    .get(i)
                    .ok_or_else(|| FlowerError::Invalid(format!("label index {i} out of range")))?,
            );
        }
        Shard::new(xs, ls, sample_shape.to_vec())
    }
    fn samples(&self) -> Result<Samples<'_>> {
        Samples::new(&self.x, &self.sample_shape, &self.labels).map_err(FlowerError::engine("data"))
    }
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// A module, its loss and optimizer choice, and the node's data.
pub struct ModuleLearner<M: Module> {
    pub dev: Device,
    pub model: M,
    pub loss: Loss,
    pub optimizer: OptimizerKind,
    pub train: Shard,
    pub test: Shard,
    /// Base seed of the per-round shuffles.
    pub seed: u64,
}

impl<M: Module> Learner for ModuleLearner<M> {
    fn device(&self) -> &Device {
        &self.dev
    }
    fn params(&self) -> Vec<Tensor> {
        let mut v = Vec::new();
        self.model.visit_params(&mut |_, p| v.push(p.tensor()));
        v
    }
    fn set_params(&mut self, values: &[Tensor]) -> Result<()> {
        let mut i = 0;
        let mut result = Ok(());
        self.model.visit_params(&mut |_, p| {
            if result.is_ok() {
                result = match values.get(i) {
                    Some(v) => p.set(v),
                    None => Err(pixelgrad_core::Error::invalid(
                        "set_params",
                        "fewer values than parameters",
                    )),
                };
            }
            i += 1;
        });
        result.map_err(FlowerError::engine("parameter update"))
    }
    async fn fit(&mut self, cfg: &RoundConfig) -> Result<FitStats> {
        let mut opt = self.optimizer.build(cfg.lr);
        let opts = FitOptions {
            epochs: cfg.epochs,
            batch_size: cfg.batch_size,
            read_every: usize::MAX / 2,
            shuffle: true,
            seed: pixelgrad_core::rng::mix(self.seed, cfg.server_round),
            // a round that fails is the server's to retry: no host checkpoints (reads)
            checkpoint_every: Some(0),
            stop_on_nan: false,
            ..Default::default()
        };
        let h = fit(
            &self.model,
            opt.as_mut(),
            self.loss,
            &self.dev,
            self.train.samples()?,
            None,
            &opts,
            &mut NoCallbacks,
        )
        .map_err(FlowerError::engine("training"))?;
        let last = h
            .epochs
            .last()
            .ok_or_else(|| FlowerError::Invalid("local training ran no epoch".into()))?;
        Ok(FitStats {
            examples: self.train.len(),
            loss: last.train_loss as f64,
            accuracy: last.train_accuracy.map_or(f64::NAN, f64::from),
        })
    }
    async fn evaluate(&mut self) -> Result<EvalStats> {
        let (loss, accuracy) =
            evaluate(&self.model, self.loss, &self.dev, self.test.samples()?, 256)
                .map_err(FlowerError::engine("evaluation"))?;
        Ok(EvalStats {
            examples: self.test.len(),
            loss: loss as f64,
            accuracy: accuracy.map_or(f64::NAN, f64::from),
        })
    }
}
