//! Optimizers and learning-rate schedules. Updates are tensor ops run under `no_grad`, so they
//! run on the device that holds the parameters; optimizer state (momentum, Adam moments) lives
//! there too. Per-step scalars (learning rate, bias corrections) travel as op parameters, which
//! GPU backends pass as uniforms: no recompilation as they change.

mod adam;
pub mod half;
mod schedule;
mod sgd;

pub use adam::{Adam, RmsProp};
pub use schedule::Schedule;
pub use sgd::Sgd;

use pixelgrad_core::{no_grad, Error, Param, Result, Tensor};

use crate::Module;

/// An optimizer updates every parameter of a module from its accumulated gradient.
pub trait Optimizer {
    /// Applies one update to every parameter that has a gradient (then clears it).
    fn step(&mut self, model: &dyn Module) -> Result<()> {
        let _g = no_grad();
        self.begin_step();
        let mut result = Ok(());
        model.visit_params(&mut |name, p| {
            if result.is_err() {
                return;
            }
            if let Some(g) = p.grad() {
                result = self.update(name, p, &g);
                p.zero_grad();
            }
        });
        result
    }
    /// Called once per step before the per-parameter updates.
    fn begin_step(&mut self) {}
    /// Updates one parameter from its gradient `g`.
    fn update(&mut self, name: &str, p: &Param, g: &Tensor) -> Result<()>;
    fn lr(&self) -> f32;
    fn set_lr(&mut self, lr: f32);
    fn name(&self) -> &'static str;
    /// The optimizer's state (momentum buffers, Adam moments and step count), for host
    /// checkpoints: tensors named `kind/parameter` (e.g. `m/0.weight`) plus scalars.
    fn state(&self) -> OptimizerState {
        OptimizerState::default()
    }
    /// Replaces the state with one from [`Optimizer::state`] (tensors on the model's device,
    /// possibly a new one after a device loss). Unknown names are an error.
    fn set_state(&mut self, state: OptimizerState) -> Result<()> {
        match state.tensors.first().map(|(n, _)| n.clone()).or_else(|| state.scalars.first().map(|(n, _)| n.clone())) {
            None => Ok(()),
            Some(n) => Err(Error::invalid("optimizer state", format!("{} keeps no state, got '{n}'", self.name()))),
        }
    }
}

/// What [`Optimizer::state`] returns: device tensors by name and host scalars by name.
#[derive(Clone, Debug, Default)]
pub struct OptimizerState {
    pub tensors: Vec<(String, Tensor)>,
    pub scalars: Vec<(String, f64)>,
}

impl OptimizerState {
    /// Splits the tensors named `kind/param` into one map per `kind` in `kinds`; any other
    /// name is an error naming the optimizer.
    pub(crate) fn maps(self, optimizer: &str, kinds: &[&str]) -> Result<Vec<std::collections::HashMap<String, Tensor>>> {
        let mut out = vec![std::collections::HashMap::new(); kinds.len()];
        for (name, t) in self.tensors {
            let slot = name.split_once('/').and_then(|(k, p)| kinds.iter().position(|x| *x == k).map(|i| (i, p.to_string())));
            match slot {
                Some((i, p)) => {
                    out[i].insert(p, t);
                }
                None => return Err(Error::invalid("optimizer state", format!("{optimizer} has no state '{name}'"))),
            }
        }
        Ok(out)
    }

    /// The tensors of `map` named `kind/param`, sorted by name (a stable order for files).
    pub(crate) fn push_map(&mut self, kind: &str, map: &std::collections::HashMap<String, Tensor>) {
        let mut v: Vec<(String, Tensor)> = map.iter().map(|(p, t)| (format!("{kind}/{p}"), t.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        self.tensors.extend(v);
    }
}

/// Optimizer choice by name, with its hyper-parameters (for configs and the CLI).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptimizerKind {
    Sgd { momentum: f32, nesterov: bool, weight_decay: f32 },
    Adam { weight_decay: f32 },
    AdamW { weight_decay: f32 },
    RmsProp,
}

impl OptimizerKind {
    /// `sgd`, `momentum`, `nesterov`, `adam`, `adamw`, `rmsprop`.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "sgd" => OptimizerKind::Sgd { momentum: 0.0, nesterov: false, weight_decay: 0.0 },
            "momentum" => OptimizerKind::Sgd { momentum: 0.9, nesterov: false, weight_decay: 0.0 },
            "nesterov" => OptimizerKind::Sgd { momentum: 0.9, nesterov: true, weight_decay: 0.0 },
            "adam" => OptimizerKind::Adam { weight_decay: 0.0 },
            "adamw" => OptimizerKind::AdamW { weight_decay: 0.01 },
            "rmsprop" => OptimizerKind::RmsProp,
            other => {
                return Err(Error::invalid(
                    "optimizer",
                    format!("unknown optimizer '{other}' (sgd, momentum, nesterov, adam, adamw, rmsprop)"),
                ))
            }
        })
    }
    pub fn build(&self, lr: f32) -> Box<dyn Optimizer> {
        match *self {
            OptimizerKind::Sgd { momentum, nesterov, weight_decay } => {
                Box::new(Sgd::new(lr).momentum(momentum).nesterov(nesterov).weight_decay(weight_decay))
            }
            OptimizerKind::Adam { weight_decay } => Box::new(Adam::new(lr).weight_decay(weight_decay)),
            OptimizerKind::AdamW { weight_decay } => Box::new(Adam::adamw(lr, weight_decay)),
            OptimizerKind::RmsProp => Box::new(RmsProp::new(lr)),
        }
    }
}
