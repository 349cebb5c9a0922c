//! What a node allows and how it trains: [`NodeOptions`], all of them the node's own (a
//! server's message can ask for a round's epochs, batch size and learning rate within
//! these ceilings, never change a privacy setting).

use crate::dp::LocalDp;
use crate::limits::DEFAULT_MARGIN;
use crate::privacy::{DistributedDp, ShareMetrics};
use crate::{FlowerError, Result};

/// Options of [`crate::node::run`].
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Defaults of a round when the config does not say.
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f32,
    /// Local DP (Flower's `LocalDpMod` semantics) on every train reply.
    pub local_dp: Option<LocalDp>,
    /// Send updates only through SecAgg+: a train instruction outside the protocol is refused.
    pub secagg: bool,
    /// Distributed DP under SecAgg+: this node's share of the noise (needs `secagg`).
    pub distributed_dp: Option<DistributedDp>,
    /// The most ε (at the DP mode's δ) this node spends over the run; a round that would go
    /// past it is refused (needs `local_dp` or `distributed_dp`, the noise the node adds).
    pub max_epsilon: Option<f64>,
    /// What replies carry besides the parameters (see [`ShareMetrics`]).
    pub share_metrics: ShareMetrics,
    /// Poll interval bounds while no message is waiting (seconds; backs off from min to max).
    pub poll_min: f64,
    pub poll_max: f64,
    /// Heartbeat period (seconds; the node declares an interval of
    /// [`crate::fleet::HEARTBEAT_INTERVAL`]).
    pub heartbeat_period: f64,
    /// After this long without a message (and at least one message seen), ask whether the run
    /// finished and stop if it did.
    pub check_run_after: f64,
    /// Give up pulling an object that stays unavailable this long.
    pub object_timeout: f64,
    /// Most local epochs a server may ask for in one round (`local-epochs` of its config).
    pub max_epochs: usize,
    /// Most rounds of local training the node does in one run.
    pub max_rounds: u64,
    /// How much larger than the local model's parameters a pulled message may be (0.05 = 5 %,
    /// plus fixed room for heads, config and metrics; see
    /// [`crate::limits::MessageLimits::for_model`]).
    pub message_margin: f64,
}

/// Default of [`NodeOptions::max_epochs`].
pub const DEFAULT_MAX_EPOCHS: usize = 100;
/// Default of [`NodeOptions::max_rounds`].
pub const DEFAULT_MAX_ROUNDS: u64 = 10_000;

impl Default for NodeOptions {
    fn default() -> Self {
        NodeOptions {
            epochs: 1,
            batch_size: 32,
            lr: 1e-3,
            local_dp: None,
            secagg: false,
            distributed_dp: None,
            max_epsilon: None,
            share_metrics: ShareMetrics::default(),
            poll_min: 0.2,
            poll_max: 2.0,
            heartbeat_period: 4.0,
            check_run_after: 6.0,
            object_timeout: 60.0,
            max_epochs: DEFAULT_MAX_EPOCHS,
            max_rounds: DEFAULT_MAX_ROUNDS,
            message_margin: DEFAULT_MARGIN,
        }
    }
}

impl NodeOptions {
    /// Refuses combinations that cannot hold: distributed DP without SecAgg+, a budget without
    /// noise the node adds itself, two DP modes at once.
    pub fn check(&self) -> Result<()> {
        if self.distributed_dp.is_some() && !self.secagg {
            return Err(FlowerError::Invalid(
                "distributed DP needs SecAgg+ (each node's noise is only a share of the total; without secure aggregation the server sees it alone)".into(),
            ));
        }
        if self.distributed_dp.is_some() && self.local_dp.is_some() {
            return Err(FlowerError::Invalid(
                "choose local DP or distributed DP, not both".into(),
            ));
        }
        if let Some(m) = self.max_epsilon {
            if !(m > 0.0 && m.is_finite()) {
                return Err(FlowerError::Invalid(format!(
                    "the maximum epsilon must be a positive number, got {m}"
                )));
            }
        }
        if self.max_epsilon.is_some() && self.local_dp.is_none() && self.distributed_dp.is_none() {
            return Err(FlowerError::Invalid(
                "a maximum epsilon needs local or distributed DP: the node can only hold to a budget on noise it adds itself".into(),
            ));
        }
        Ok(())
    }

    /// δ of the node's DP mode, if it has one.
    pub fn dp_delta(&self) -> Option<f64> {
        self.local_dp
            .map(|l| l.delta)
            .or(self.distributed_dp.map(|d| d.delta))
    }
}
