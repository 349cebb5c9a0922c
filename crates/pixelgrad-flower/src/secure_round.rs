//! A node's side of a SecAgg+ round (flwr's `SecAggPlusWorkflow`): four train messages, each
//! carrying a `secaggplus_configs` record with its stage. The protocol itself is
//! [`crate::secagg`]; here the node's parts around it:
//!
//! - `setup`: the node checks its round ceiling and privacy budget first (a round it would
//!   refuse later is refused here, so the server leaves it out from the start);
//! - `collect_masked_vectors`: the shares addressed to the node are decrypted and checked
//!   before any training; then the model trains on the instruction it carries (legacy
//!   layout), the update is clipped and noised as the node's DP asks, quantised and masked on
//!   the host (its values had to be read back to be sent in any case), and the reply carries
//!   the masked vector plus only what [`ShareMetrics`] allows in clear. Under DP every node
//!   weighs 1 (`max_weight`), so the sum's sensitivity is one clipped update and no weight
//!   leaks an example count.

use crate::events::Event;
use crate::learner::Learner;
use crate::legacy;
use crate::options::NodeOptions;
use crate::privacy::{Budget, Release, ShareMetrics};
use crate::records::{ArrayRecord, ConfigRecord, MetricRecord, MetricValue, Record, RecordDict};
use crate::round::{self, OwnDp};
use crate::secagg::{self, MaskInput, OsEntropy, SecAggClient, Stage, RECORD_KEY_CONFIGS};
use crate::{FlowerError, Result};

/// The node's SecAgg+ state across the messages of a round.
pub struct SecureRound {
    client: SecAggClient,
    entropy: OsEntropy,
}

impl SecureRound {
    pub fn new(node_id: u64) -> Result<Self> {
        Ok(SecureRound {
            client: SecAggClient::new(node_id),
            entropy: OsEntropy::new()?,
        })
    }
}

/// The `secaggplus_configs` record of a message, if it has one.
pub fn configs(content: &RecordDict) -> Option<&ConfigRecord> {
    content
        .config_records()
        .into_iter()
        .find(|(k, _)| *k == RECORD_KEY_CONFIGS)
        .map(|(_, c)| c)
}

/// What handling one SecAgg+ message gave.
pub struct Handled {
    pub reply: RecordDict,
    pub events: Vec<Event>,
    /// The model trained (the collect stage).
    pub trained: bool,
}

fn release(opts: &NodeOptions, threshold: u64) -> Option<Release> {
    opts.local_dp.as_ref().map(Release::local).or(opts
        .distributed_dp
        .as_ref()
        .map(|d| Release::distributed(d, threshold)))
}

fn with_configs(mut content: RecordDict, cfg: ConfigRecord) -> RecordDict {
    content
        .0
        .push((RECORD_KEY_CONFIGS.into(), Record::Config(cfg)));
    content
}

/// Handles a train message carrying `cfg` (its `secaggplus_configs`) for a node that has
/// trained `rounds_trained` rounds.
#[allow(clippy::too_many_arguments)]
pub async fn handle<L: Learner>(
    state: &mut SecureRound,
    learner: &mut L,
    opts: &NodeOptions,
    budget: Option<&mut Budget>,
    content: &RecordDict,
    cfg: &ConfigRecord,
    round: u64,
    rounds_trained: u64,
    now: impl Fn() -> f64,
) -> Result<Handled> {
    let stage = secagg::stage_of(cfg)?;
    state.client.check_next(stage)?;
    let t0 = now();
    let mut events = Vec::new();
    let mut trained = false;
    let out = match stage {
        Stage::Setup => {
            if rounds_trained >= opts.max_rounds {
                return Err(FlowerError::limit(
                    "the rounds of local training the server asks for (raise the node's max rounds to allow more)",
                    rounds_trained + 1,
                    opts.max_rounds,
                ));
            }
            let out = state.client.setup(cfg, &mut state.entropy)?;
            let t = state.client.setup_params().map_or(1, |s| s.threshold);
            if let (Some(b), Some(r)) = (budget.as_deref(), release(opts, t)) {
                b.check(&r)?;
            }
            with_configs(RecordDict::default(), out)
        }
        Stage::ShareKeys => {
            let out = state
                .client
                .share_keys(cfg, &mut state.entropy, now().max(0.0) as u64)?;
            with_configs(RecordDict::default(), out)
        }
        Stage::CollectMaskedVectors => {
            state.client.receive_shares(cfg)?;
            let setup = state
                .client
                .setup_params()
                .cloned()
                .ok_or_else(|| FlowerError::Protocol("SecAgg+: masking before setup".into()))?;
            let r = release(opts, setup.threshold);
            if let (Some(b), Some(r)) = (budget.as_deref(), r.as_ref()) {
                b.check(r)?;
            }
            let ins = legacy::instruction(content, "train")?;
            let own = match (&opts.local_dp, &opts.distributed_dp) {
                (Some(l), _) => OwnDp {
                    clip: Some(l.clipping_norm),
                    noise_std: Some(l.std_dev()),
                },
                (None, Some(d)) => OwnDp {
                    clip: Some(d.clipping_norm),
                    noise_std: Some(d.node_std(setup.threshold)),
                },
                _ => OwnDp::default(),
            };
            let u = round::train_update(learner, opts, ins.arrays, &ins.config, round, own, &now)
                .await?;
            let dp = r.is_some();
            let t_mask = now();
            let arrays: Vec<(Vec<usize>, Vec<f32>)> = u
                .arrays
                .iter()
                .map(|a| (a.shape.clone(), a.data.clone()))
                .collect();
            // Under DP every node weighs the same (ratio 1): the sum's sensitivity is one
            // clipped update and no weight reveals a count.
            let weight = if dp {
                setup.max_weight
            } else {
                u.stats.examples as f64
            };
            let masked = state.client.mask(
                &MaskInput {
                    arrays: &arrays,
                    weight,
                },
                &mut state.entropy,
            )?;
            let mask_seconds = now() - t_mask;
            // In clear: the count only where the node shares everything and weights are its
            // own (without DP); loss and accuracy only if it shares everything.
            let all = opts.share_metrics == ShareMetrics::All;
            let count = if all && !dp {
                u.stats.examples as i64
            } else {
                1
            };
            let metrics = if all {
                vec![
                    ("train_loss".to_string(), MetricValue::Float(u.stats.loss)),
                    (
                        "train_accuracy".to_string(),
                        MetricValue::Float(u.stats.accuracy),
                    ),
                ]
            } else {
                Vec::new()
            };
            let reply = legacy::fit_reply(
                ins.layout,
                ArrayRecord::default(),
                count,
                MetricRecord(metrics),
            );
            let (mut epsilon, mut epsilon_own, mut delta) = (None, None, None);
            if let (Some(b), Some(r)) = (budget, r) {
                b.spend(&r);
                let (e, o) = b.epsilon();
                (epsilon, epsilon_own, delta) = (Some(e), Some(o), Some(b.delta));
            }
            trained = true;
            events.push(Event::Trained {
                round,
                stats: u.stats,
                update_norm: u.update_norm,
                clipped_to: u.clipped_to,
                noise_std: u.noise_std,
                seconds: u.seconds,
                secagg: true,
                epsilon,
                epsilon_own,
                delta,
            });
            events.push(Event::SecAggStage {
                round,
                stage: stage.name().into(),
                seconds: mask_seconds,
            });
            return Ok(Handled {
                reply: with_configs(reply, masked),
                events,
                trained,
            });
        }
        Stage::Unmask => with_configs(RecordDict::default(), state.client.unmask(cfg)?),
    };
    events.push(Event::SecAggStage {
        round,
        stage: stage.name().into(),
        seconds: now() - t0,
    });
    Ok(Handled {
        reply: out,
        events,
        trained,
    })
}
