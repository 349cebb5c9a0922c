//! A pixelgrad model as a node of a Flower federation: what a SuperNode and its ClientApp do
//! together, in one loop.
//!
//! 1. `RegisterNode` + `ActivateNode` with the node key; heartbeats start in the background.
//!    With node authentication on, the SuperLink refuses self-registration (its operator
//!    registered the key); the node then activates directly, and a key that is not registered
//!    ends the node with [`FlowerError::NotRegistered`].
//! 2. `PullMessages` (backing off while there is nothing), then every object of the message's
//!    tree with `PullObject` (retrying objects not yet available), `ConfirmMessageReceived`,
//!    and the message inflated and checked ([`crate::objects`]). The tree and the objects are
//!    held to [`MessageLimits`] derived from the local model (object IDs, object count, bytes,
//!    array elements counted over every reference), checked before pulling or allocating.
//! 3. `train`: the one `ArrayRecord` is matched to the local parameters (same count, same
//!    shapes, in order; the server's keys are kept for the reply), loaded, the model trained on
//!    the local data ([`Learner::fit`]), the update clipped if the config has `clipping_norm`
//!    (client-side fixed clipping) and clipped + noised if local DP is on, read back once, and
//!    replied as `{"arrays": ArrayRecord, "metrics": MetricRecord}` with `num-examples`.
//!    `evaluate`: the arrays loaded, [`Learner::evaluate`] on the local test data, replied as
//!    `{"metrics": ...}`. Any other message type gets an error reply.
//! 4. `PushMessages` with the reply's metadata and object tree, then `PushObject` for every
//!    object the SuperLink asks for.
//! 5. When no message came for a while, `GetRun` tells whether the run finished; the node then
//!    deactivates and unregisters.
//!
//! Parameters that do not fit the local model are answered with an error reply (so the
//! strategy sees a failure, not a hang) and end the loop with [`FlowerError::Mismatch`]; the
//! local model is not touched. A train instruction asking for more local epochs than
//! [`NodeOptions::max_epochs`] gets an error reply ([`ERROR_MOD_FAILED_PRECONDITION`]) and the
//! node keeps serving; one more train instruction than [`NodeOptions::max_rounds`] gets an
//! error reply and ends the node with [`FlowerError::Limit`].

use std::collections::HashMap;

use pixelgrad_core::{Device, Tensor};

use crate::dp::{self, LocalDp};
use crate::fleet::{codes, FleetClient, Traffic, HEARTBEAT_INTERVAL};
use crate::limits::{MessageLimits, DEFAULT_MARGIN};
use crate::npy::NdArray;
use crate::objects::{self, Deflated, InflatedMessage};
use crate::proto::{self, Node};
use crate::records::{ArrayRecord, ConfigRecord, MetricRecord, MetricValue, Record, RecordDict};
use crate::transport::Transport;
use crate::{FlowerError, Result};

/// Flower's error code for a ClientApp that raised (`ErrorCode.CLIENT_APP_RAISED_EXCEPTION`).
pub const ERROR_CLIENT_APP_RAISED: i64 = 2;
/// `ErrorCode.MOD_FAILED_PRECONDITION`: the message lacked what a (DP) mod needs.
pub const ERROR_MOD_FAILED_PRECONDITION: i64 = 6;
/// Flower's config key of client-side clipping.
pub const KEY_CLIPPING_NORM: &str = "clipping_norm";

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

/// Options of [`run`].
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Defaults of a round when the config does not say.
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f32,
    /// Local DP (Flower's `LocalDpMod` semantics) on every train reply.
    pub local_dp: Option<LocalDp>,
    /// Poll interval bounds while no message is waiting (seconds; backs off from min to max).
    pub poll_min: f64,
    pub poll_max: f64,
    /// Heartbeat period (seconds; the node declares an interval of [`HEARTBEAT_INTERVAL`]).
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
    /// plus fixed room for heads, config and metrics; see [`MessageLimits::for_model`]).
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

/// Progress of the node, for logs and the browser's `onRound`.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Connected {
        node_id: u64,
    },
    /// A message arrived (`kind` = `train` / `evaluate` / ...), with its payload size.
    Received {
        round: u64,
        kind: String,
        bytes: u64,
    },
    Trained {
        round: u64,
        stats: FitStats,
        update_norm: f64,
        clipped_to: Option<f64>,
        noise_std: Option<f64>,
        seconds: f64,
    },
    /// The global model evaluated locally; `arrays` are the global parameters it received.
    Evaluated {
        round: u64,
        stats: EvalStats,
        arrays: ArrayRecord,
    },
    /// A reply was pushed; `bytes` = its objects.
    Replied {
        round: u64,
        kind: String,
        bytes: u64,
    },
    /// An error reply was pushed.
    Failed {
        round: u64,
        reason: String,
    },
    /// A poll found no message (lets the caller stop an idle node).
    Waiting,
    Finished {
        rounds: u64,
    },
}

/// What a finished node reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub node_id: u64,
    pub rounds_trained: u64,
    pub evaluations: u64,
    pub traffic: Traffic,
    /// The run this node took part in (0 if none).
    pub run_id: u64,
}

/// A callback's verdict: go on, or stop the node (it deactivates and returns `Stopped`).
pub type Flow = std::ops::ControlFlow<()>;

fn round_of(md: &proto::Metadata, cfg: Option<&ConfigRecord>) -> u64 {
    cfg.and_then(|c| c.get("server-round"))
        .and_then(|v| v.as_f64())
        .map(|v| v as u64)
        .or_else(|| md.group_id.parse().ok())
        .unwrap_or(0)
}

/// Checks that `arrays` fit `params` (count and shapes, in order).
pub fn check_fit(arrays: &ArrayRecord, params: &[Tensor]) -> Result<()> {
    if arrays.0.len() != params.len() {
        let server: Vec<String> = arrays
            .0
            .iter()
            .map(|(k, a)| format!("{k} {:?}", a.shape))
            .collect();
        let local: Vec<String> = params.iter().map(|p| format!("{:?}", p.dims())).collect();
        return Err(FlowerError::Mismatch(format!(
            "the server sent {} arrays [{}], the local model has {} parameters [{}]",
            arrays.0.len(),
            server.join(", "),
            params.len(),
            local.join(", ")
        )));
    }
    for (i, ((k, a), p)) in arrays.0.iter().zip(params).enumerate() {
        if a.shape != p.dims() {
            return Err(FlowerError::Mismatch(format!(
                "array {i} ('{k}') has shape {:?} but local parameter {i} has shape {:?}",
                a.shape,
                p.dims()
            )));
        }
    }
    Ok(())
}

/// The metadata of a reply to `ins`, as Flower's `Message(..., reply_to=ins)` sets it.
pub fn reply_metadata(ins: &proto::Metadata, now: f64) -> proto::Metadata {
    proto::Metadata {
        run_id: ins.run_id,
        message_id: String::new(),
        src_node_id: ins.dst_node_id,
        dst_node_id: ins.src_node_id,
        reply_to_message_id: ins.message_id.clone(),
        group_id: ins.group_id.clone(),
        ttl: (ins.created_at + ins.ttl - now).max(1.0),
        message_type: ins.message_type.clone(),
        created_at: now,
        src_task_id: ins.dst_task_id,
        dst_task_id: ins.src_task_id,
    }
}

/// How the node came to be known to the SuperLink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// It registered its own key (a SuperLink without node authentication); with a key made
    /// for this run it unregisters when it leaves.
    SelfRegistered,
    /// Its key was registered already (a persistent key that joined before).
    AlreadyRegistered,
    /// Node authentication is on: the operator registered the key (`flwr supernode register`).
    ByOperator,
}

/// A node connected to a SuperLink.
pub struct Session<'a, T: Transport> {
    pub client: &'a FleetClient<T>,
    pub node_id: u64,
    pub registration: Registration,
    opts: NodeOptions,
}

impl<'a, T: Transport> Session<'a, T> {
    /// Registers (where the SuperLink lets nodes do that) and activates the node.
    pub async fn connect(client: &'a FleetClient<T>, opts: NodeOptions) -> Result<Session<'a, T>> {
        let registration = match client.register().await {
            Ok(_) => Registration::SelfRegistered,
            Err(FlowerError::Http {
                code: Some(codes::REGISTRATION_DISABLED),
                ..
            }) => Registration::ByOperator,
            Err(FlowerError::Http {
                code: Some(codes::PUBLIC_KEY_ALREADY_IN_USE),
                ..
            }) => Registration::AlreadyRegistered,
            Err(e) => return Err(e),
        };
        let node_id = match client.activate().await {
            Ok(id) => id,
            Err(FlowerError::Http {
                code: Some(codes::ACTIVATION_FAILED),
                msg,
                ..
            }) => {
                let why = match registration {
                    Registration::ByOperator => format!(
                        "node authentication is on and this node's public key ({}) is not registered; the SuperLink's operator registers it with `flwr supernode register KEY.pub`",
                        client.key().fingerprint()
                    ),
                    _ => format!(
                        "this node's public key ({}) was unregistered from the SuperLink, which never lets a key register twice; use a new key",
                        client.key().fingerprint()
                    ),
                };
                return Err(FlowerError::NotRegistered {
                    url: client.transport.base_url().to_string(),
                    msg: format!("{why} ({msg})"),
                });
            }
            Err(e) => return Err(e),
        };
        Ok(Session {
            client,
            node_id,
            registration,
            opts,
        })
    }

    /// Pulls the next message, if one is waiting: (message, payload bytes). The message may
    /// not exceed `limits`; `pulled` gets its metadata as soon as it is known (so a caller can
    /// send an error reply to a message that failed to arrive).
    pub async fn pull(
        &self,
        limits: &MessageLimits,
        pulled: &mut Option<proto::Metadata>,
    ) -> Result<Option<(InflatedMessage, u64)>> {
        let r = self.client.pull_messages(self.node_id).await?;
        let (Some(m), Some(tree)) = (
            r.messages_list.into_iter().next(),
            r.message_object_trees.into_iter().next(),
        ) else {
            return Ok(None);
        };
        let md = m
            .metadata
            .ok_or_else(|| FlowerError::Protocol("a pulled message has no metadata".into()))?;
        objects::check_object_id(&md.message_id, "the pulled message's ID")?;
        *pulled = Some(md.clone());
        if tree.object_id != md.message_id {
            return Err(FlowerError::Protocol(
                "the object tree's root is not the pulled message".into(),
            ));
        }
        let mut objects: HashMap<String, Vec<u8>> = HashMap::new();
        let mut bytes = 0u64;
        for id in objects::checked_tree_ids(&tree, limits)? {
            let t0 = self.client.transport.now();
            let mut wait = 0.05;
            loop {
                let o = self
                    .client
                    .pull_object(self.node_id, md.run_id, &id)
                    .await?;
                if !o.object_found {
                    return Err(FlowerError::Protocol(format!(
                        "object {id} of message {} is not on the SuperLink",
                        md.message_id
                    )));
                }
                if o.object_available {
                    bytes += o.object_content.len() as u64;
                    if bytes > limits.max_bytes {
                        return Err(FlowerError::limit(
                            "the bytes of the server's message (the local model's parameters are fewer)",
                            bytes,
                            limits.max_bytes,
                        ));
                    }
                    if objects::object_id(&o.object_content) != id {
                        return Err(FlowerError::Protocol(format!(
                            "object {} of message {}: the content pulled does not hash to its ID",
                            &id[..12],
                            &md.message_id[..12]
                        )));
                    }
                    objects.insert(id.clone(), o.object_content);
                    break;
                }
                if self.client.transport.now() - t0 > self.opts.object_timeout {
                    return Err(FlowerError::Protocol(format!(
                        "object {id} stayed unavailable for {} s",
                        self.opts.object_timeout
                    )));
                }
                self.client.transport.sleep(wait).await;
                wait = (wait * 2.0).min(1.0);
            }
        }
        self.client
            .confirm_received(self.node_id, md.run_id, &md.message_id)
            .await?;
        Ok(Some((
            objects::inflate_message(&md.message_id, &objects, limits)?,
            bytes,
        )))
    }

    /// Pushes a reply (content or error) to `ins`; returns the bytes of the objects sent.
    pub async fn reply(
        &self,
        ins: &proto::Metadata,
        content: Option<&RecordDict>,
        error: Option<proto::Error>,
    ) -> Result<u64> {
        let t = &self.client.transport;
        let md = reply_metadata(ins, t.now());
        let d: Deflated = objects::deflate_message(&md, content, error.as_ref());
        let mut sent_md = md;
        sent_md.message_id = d.message_id.clone();
        let msg = proto::Message {
            metadata: Some(sent_md),
            content: content.map(|_| proto::RecordDict::default()),
            error,
        };
        let req = proto::PushMessagesRequest {
            node: Some(Node {
                node_id: self.node_id,
            }),
            messages_list: vec![msg],
            message_object_trees: vec![d.tree.clone()],
            clientapp_runtime_list: vec![0.0],
        };
        let r = self.client.push_messages(&req).await?;
        if !r.results.contains_key(&d.message_id) {
            return Err(FlowerError::Protocol(format!(
                "the SuperLink did not accept reply {} (no result for it)",
                d.message_id
            )));
        }
        let wanted: std::collections::HashSet<&str> =
            r.objects_to_push.iter().map(String::as_str).collect();
        let mut bytes = 0u64;
        for (id, content) in &d.objects {
            if wanted.contains(id.as_str()) {
                bytes += content.len() as u64;
                if !self
                    .client
                    .push_object(self.node_id, ins.run_id, &r.session_id, id, content.clone())
                    .await?
                {
                    return Err(FlowerError::Protocol(format!(
                        "the SuperLink did not store object {id} of the reply"
                    )));
                }
            }
        }
        Ok(bytes)
    }

    async fn error_reply(&self, ins: &proto::Metadata, code: i64, reason: &str) -> Result<u64> {
        self.reply(
            ins,
            None,
            Some(proto::Error {
                code,
                reason: reason.into(),
            }),
        )
        .await
    }

    /// The run's status string (`running`, `finished`, ...); `None` if the SuperLink refuses
    /// to tell (it does once a run is over).
    pub async fn run_status(&self, run_id: u64) -> Result<Option<String>> {
        let r: Result<proto::GetRunResponse> = self
            .client
            .call(
                "get-run",
                &proto::GetRunRequest {
                    node: Some(Node {
                        node_id: self.node_id,
                    }),
                    run_id,
                },
            )
            .await;
        match r {
            Ok(r) => Ok(r.run.and_then(|r| r.status).map(|s| s.status)),
            Err(FlowerError::Http { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deactivates, and unregisters a node that registered a key made for this run (best
    /// effort: errors are returned, nothing is retried). A persistent key stays registered, as
    /// with Flower's SuperNode: flwr 1.42 never lets an unregistered key register again.
    pub async fn leave(&self) -> Result<()> {
        self.client.deactivate(self.node_id).await?;
        if self.registration == Registration::SelfRegistered && !self.client.key().is_persistent() {
            match self.client.unregister(self.node_id).await {
                Err(FlowerError::Http {
                    code: Some(codes::UNREGISTRATION_DISABLED),
                    ..
                }) => Ok(()),
                other => other,
            }
        } else {
            Ok(())
        }
    }
}

fn single_arrays<'m>(content: &'m RecordDict, kind: &str) -> Result<(&'m str, &'m ArrayRecord)> {
    match content.array_records().as_slice() {
        [one] => Ok(*one),
        other => Err(FlowerError::Protocol(format!(
            "a {kind} message must carry exactly one ArrayRecord, this one has {}",
            other.len()
        ))),
    }
}

fn upload(dev: &Device, arrays: &ArrayRecord) -> Result<Vec<Tensor>> {
    arrays
        .0
        .iter()
        .map(|(_, a)| {
            Tensor::from_vec(dev, &a.data, a.shape.clone()).map_err(FlowerError::engine("upload"))
        })
        .collect()
}

/// Reads device tensors back (async: no blocking read in the browser).
pub async fn read_back(ts: &[Tensor]) -> Result<Vec<NdArray>> {
    let mut out = Vec::with_capacity(ts.len());
    for t in ts {
        let v = t
            .to_vec_async()
            .await
            .map_err(FlowerError::engine("readback"))?;
        out.push(NdArray::new(t.dims().to_vec(), v)?);
    }
    Ok(out)
}

/// A positive whole number from the config (`key`), or `default` when it is not there.
fn count(cfg: &ConfigRecord, key: &str, default: u64) -> Result<u64> {
    match cfg.get(key) {
        None => Ok(default),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 1.0 && x.fract() == 0.0 && x < 2f64.powi(53) => {
                Ok(x as u64)
            }
            _ => Err(FlowerError::Protocol(format!(
                "'{key}' must be a positive whole number, got {v:?}"
            ))),
        },
    }
}

/// The round's settings from the server's config within the node's ceilings.
pub fn round_config(cfg: &ConfigRecord, opts: &NodeOptions, round: u64) -> Result<RoundConfig> {
    let epochs = count(cfg, "local-epochs", opts.epochs as u64)?;
    if epochs > opts.max_epochs as u64 {
        return Err(FlowerError::limit(
            "the local epochs the server asks for ('local-epochs'; raise the node's max epochs to allow more)",
            epochs,
            opts.max_epochs as u64,
        ));
    }
    let batch_size = count(cfg, "batch-size", opts.batch_size as u64)?;
    let lr = match cfg.get("lr") {
        None => opts.lr,
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 && (x as f32).is_finite() => x as f32,
            _ => {
                return Err(FlowerError::Protocol(format!(
                    "'lr' must be a finite non-negative number, got {v:?}"
                )))
            }
        },
    };
    Ok(RoundConfig {
        server_round: round,
        epochs: epochs as usize,
        // a batch larger than any shard is a full batch; no need to keep the server's number
        batch_size: usize::try_from(batch_size)
            .unwrap_or(usize::MAX)
            .min(1 << 24),
        lr,
    })
}

/// Local training on a train message; returns the reply content and the event.
async fn handle_train<L: Learner>(
    learner: &mut L,
    opts: &NodeOptions,
    content: &RecordDict,
    round: u64,
    now: impl Fn() -> f64,
) -> Result<(RecordDict, Event)> {
    let (_, arrays) = single_arrays(content, "train")?;
    let params = learner.params();
    check_fit(arrays, &params)?;
    let cfg = content
        .config_records()
        .first()
        .map(|(_, c)| (*c).clone())
        .unwrap_or_default();
    let rc = round_config(&cfg, opts, round)?;
    let clip = match cfg.get(KEY_CLIPPING_NORM) {
        None => None,
        Some(v) => match v.as_f64() {
            Some(c) if c > 0.0 && c.is_finite() => Some(c),
            _ => {
                return Err(FlowerError::Protocol(format!(
                    "'{KEY_CLIPPING_NORM}' must be a positive number, got {v:?}"
                )))
            }
        },
    };
    let dev = learner.device().clone();
    let reference = upload(&dev, arrays)?;
    learner.set_params(&reference)?;
    let t0 = now();
    let stats = learner.fit(&rc).await?;
    let seconds = now() - t0;
    let trained = learner.params();
    let norm_t = dp::update_norm(&trained, &reference).map_err(FlowerError::engine("dp"))?;
    let mut sent = trained;
    // Client-side fixed clipping (the server wrapper adds the noise), then local DP (clip to
    // its own norm, add noise): the order Flower's mods run in when both are present.
    if let Some(c) = clip {
        sent = dp::clip_update(&sent, &reference, c as f32)
            .map_err(FlowerError::engine("dp"))?
            .0;
    }
    let mut noise_std = None;
    if let Some(l) = opts.local_dp {
        sent = dp::clip_update(&sent, &reference, l.clipping_norm as f32)
            .map_err(FlowerError::engine("dp"))?
            .0;
        let std = l.std_dev();
        sent = dp::add_noise(&sent, std as f32, dp::fresh_seed()?)
            .map_err(FlowerError::engine("dp"))?;
        noise_std = Some(std);
    }
    let update_norm = norm_t
        .to_vec_async()
        .await
        .map_err(FlowerError::engine("dp"))?
        .first()
        .copied()
        .unwrap_or(f32::NAN) as f64;
    let host = read_back(&sent).await?;
    let out = ArrayRecord(arrays.0.iter().map(|(k, _)| k.clone()).zip(host).collect());
    let metrics = MetricRecord(vec![
        (
            "num-examples".into(),
            MetricValue::Int(stats.examples as i64),
        ),
        ("train_loss".into(), MetricValue::Float(stats.loss)),
        ("train_accuracy".into(), MetricValue::Float(stats.accuracy)),
    ]);
    let reply = RecordDict(vec![
        ("arrays".into(), Record::Arrays(out)),
        ("metrics".into(), Record::Metrics(metrics)),
    ]);
    let clipped_to = clip.or(opts.local_dp.map(|l| l.clipping_norm));
    Ok((
        reply,
        Event::Trained {
            round,
            stats,
            update_norm,
            clipped_to,
            noise_std,
            seconds,
        },
    ))
}

async fn handle_evaluate<L: Learner>(
    learner: &mut L,
    content: &RecordDict,
    round: u64,
) -> Result<(RecordDict, Event)> {
    let (_, arrays) = single_arrays(content, "evaluate")?;
    check_fit(arrays, &learner.params())?;
    let dev = learner.device().clone();
    let values = upload(&dev, arrays)?;
    learner.set_params(&values)?;
    let stats = learner.evaluate().await?;
    let metrics = MetricRecord(vec![
        (
            "num-examples".into(),
            MetricValue::Int(stats.examples as i64),
        ),
        ("loss".into(), MetricValue::Float(stats.loss)),
        ("accuracy".into(), MetricValue::Float(stats.accuracy)),
    ]);
    Ok((
        RecordDict(vec![("metrics".into(), Record::Metrics(metrics))]),
        Event::Evaluated {
            round,
            stats,
            arrays: arrays.clone(),
        },
    ))
}

/// Runs the node until the run finishes, `on_event` returns `Break` (→ `Stopped`), or an error.
/// The node deactivates and unregisters on the way out whenever the SuperLink is reachable.
pub async fn run<T: Transport, L: Learner>(
    client: &FleetClient<T>,
    learner: &mut L,
    opts: &NodeOptions,
    on_event: &mut dyn FnMut(&Event) -> Flow,
) -> Result<Summary> {
    let session = Session::connect(client, opts.clone()).await?;
    let hb = client.transport.start_heartbeats(
        client.key(),
        session.node_id,
        opts.heartbeat_period.min(HEARTBEAT_INTERVAL / 2.0),
    );
    let mut summary = Summary {
        node_id: session.node_id,
        ..Default::default()
    };
    let result = serve(&session, learner, opts, on_event, &mut summary, &hb).await;
    let hb_traffic = hb.stop();
    let left = session.leave().await;
    summary.traffic = client.traffic();
    summary.traffic.up += hb_traffic.up;
    summary.traffic.down += hb_traffic.down;
    match result {
        Ok(()) => {
            // A node that cannot say goodbye still finished its work; the SuperLink marks it
            // offline after two missed heartbeats.
            let _ = left;
            let _ = on_event(&Event::Finished {
                rounds: summary.rounds_trained,
            });
            Ok(summary)
        }
        Err(e) => Err(e),
    }
}

async fn serve<T: Transport, L: Learner>(
    s: &Session<'_, T>,
    learner: &mut L,
    opts: &NodeOptions,
    on_event: &mut dyn FnMut(&Event) -> Flow,
    summary: &mut Summary,
    hb: &crate::transport::Heartbeats,
) -> Result<()> {
    let t = &s.client.transport;
    if on_event(&Event::Connected { node_id: s.node_id }).is_break() {
        return Err(FlowerError::Stopped);
    }
    let shapes: Vec<Vec<usize>> = learner.params().iter().map(|p| p.dims().to_vec()).collect();
    let limits = MessageLimits::for_model(&shapes, opts.message_margin)?;
    let mut wait = opts.poll_min;
    let mut idle_since = t.now();
    loop {
        if let Some(why) = hb.lost() {
            return Err(FlowerError::Protocol(why));
        }
        let mut pulled = None;
        let next = match s.pull(&limits, &mut pulled).await {
            Ok(n) => n,
            Err(e) => {
                // A message that arrived but cannot be accepted: tell the server (so it sees a
                // failure, not a silent node), then stop.
                if let (Some(md), FlowerError::Protocol(_) | FlowerError::Limit { .. }) =
                    (&pulled, &e)
                {
                    let reason = format!("pixelgrad node {}: {e}", s.node_id);
                    let _ = s
                        .error_reply(md, ERROR_MOD_FAILED_PRECONDITION, &reason)
                        .await;
                }
                return Err(e);
            }
        };
        let Some((msg, bytes)) = next else {
            if on_event(&Event::Waiting).is_break() {
                return Err(FlowerError::Stopped);
            }
            if summary.run_id != 0 && t.now() - idle_since > opts.check_run_after {
                match s.run_status(summary.run_id).await? {
                    Some(st) if st != "finished" => idle_since = t.now(),
                    _ => return Ok(()),
                }
            }
            t.sleep(wait).await;
            wait = (wait * 1.5).min(opts.poll_max);
            continue;
        };
        wait = opts.poll_min;
        let md = msg.metadata.clone();
        summary.run_id = md.run_id;
        let kind = md.message_type.split('.').next().unwrap_or("").to_string();
        let content = match (&msg.content, &msg.error) {
            (Some(c), _) => c.clone(),
            (None, _) => {
                // An instruction carrying an error has nothing to run.
                idle_since = t.now();
                continue;
            }
        };
        let cfg = content.config_records().first().map(|(_, c)| (*c).clone());
        let round = round_of(&md, cfg.as_ref());
        if on_event(&Event::Received {
            round,
            kind: kind.clone(),
            bytes,
        })
        .is_break()
        {
            return Err(FlowerError::Stopped);
        }
        if kind == "train" && summary.rounds_trained >= opts.max_rounds {
            let e = FlowerError::limit(
                "the rounds of local training the server asks for (raise the node's max rounds to allow more)",
                summary.rounds_trained + 1,
                opts.max_rounds,
            );
            let reason = format!("pixelgrad node {}: {e}", s.node_id);
            let _ = s
                .error_reply(&md, ERROR_MOD_FAILED_PRECONDITION, &reason)
                .await;
            let _ = on_event(&Event::Failed { round, reason });
            return Err(e);
        }
        let handled = match kind.as_str() {
            "train" => handle_train(learner, opts, &content, round, || t.now()).await,
            "evaluate" => handle_evaluate(learner, &content, round).await,
            other => Err(FlowerError::Protocol(format!(
                "message type '{other}' is not supported (train, evaluate)"
            ))),
        };
        match handled {
            Ok((reply, ev)) => {
                if kind == "train" {
                    summary.rounds_trained += 1;
                } else {
                    summary.evaluations += 1;
                }
                let stop = on_event(&ev).is_break();
                let sent = s.reply(&md, Some(&reply), None).await?;
                if on_event(&Event::Replied {
                    round,
                    kind,
                    bytes: sent,
                })
                .is_break()
                    || stop
                {
                    return Err(FlowerError::Stopped);
                }
            }
            Err(e) => {
                let code = if matches!(e, FlowerError::Protocol(_) | FlowerError::Limit { .. }) {
                    ERROR_MOD_FAILED_PRECONDITION
                } else {
                    ERROR_CLIENT_APP_RAISED
                };
                let reason = format!("pixelgrad node {}: {e}", s.node_id);
                let _ = s.error_reply(&md, code, &reason).await;
                let _ = on_event(&Event::Failed { round, reason });
                // A mismatch or a failed local step ends the node; a message it cannot run
                // (unknown type) or a round it refuses (too many epochs) does not.
                let goes_on = matches!(e, FlowerError::Limit { .. })
                    || (matches!(e, FlowerError::Protocol(_))
                        && kind != "train"
                        && kind != "evaluate");
                if !goes_on {
                    return Err(e);
                }
            }
        }
        idle_since = t.now();
    }
}
