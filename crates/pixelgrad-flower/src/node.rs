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

use crate::fleet::{codes, FleetClient, Traffic, HEARTBEAT_INTERVAL};
use crate::legacy::{self, Layout};
use crate::limits::MessageLimits;
use crate::objects::{self, Deflated, InflatedMessage};
use crate::privacy::{rounded_count, Budget, Release, ShareMetrics};
use crate::proto::{self, Node};
use crate::records::{ConfigRecord, MetricRecord, MetricValue, RecordDict};
use crate::round::{self, OwnDp};
use crate::secure_round::{self, SecureRound};
use crate::transport::Transport;
use crate::{FlowerError, Result};

pub use crate::events::Event;
pub use crate::learner::{EvalStats, FitStats, Learner, RoundConfig};
pub use crate::options::{NodeOptions, DEFAULT_MAX_EPOCHS, DEFAULT_MAX_ROUNDS};
pub use crate::round::{check_fit, read_back, round_config, KEY_CLIPPING_NORM};

/// Flower's error code for a ClientApp that raised (`ErrorCode.CLIENT_APP_RAISED_EXCEPTION`).
pub const ERROR_CLIENT_APP_RAISED: i64 = 2;
/// `ErrorCode.MOD_FAILED_PRECONDITION`: the message lacked what a (DP) mod needs.
pub const ERROR_MOD_FAILED_PRECONDITION: i64 = 6;

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

/// Runs the node until the run finishes, `on_event` returns `Break` (→ `Stopped`), or an error.
/// The node deactivates and unregisters on the way out whenever the SuperLink is reachable.
pub async fn run<T: Transport, L: Learner>(
    client: &FleetClient<T>,
    learner: &mut L,
    opts: &NodeOptions,
    on_event: &mut dyn FnMut(&Event) -> Flow,
) -> Result<Summary> {
    opts.check()?;
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

/// A plain train instruction (no SecAgg+): the update, clipped and noised as the node's DP
/// asks, in the instruction's layout, with what [`ShareMetrics`] allows.
async fn handle_train<L: Learner>(
    learner: &mut L,
    opts: &NodeOptions,
    budget: Option<&mut Budget>,
    content: &RecordDict,
    round: u64,
    now: impl Fn() -> f64,
) -> Result<(RecordDict, Event)> {
    if opts.secagg {
        return Err(FlowerError::Protocol(
            "this node sends its updates only through SecAgg+ (secaggplus_mod's protocol); the server sent a plain train instruction"
                .into(),
        ));
    }
    let r = opts.local_dp.as_ref().map(Release::local);
    if let (Some(b), Some(r)) = (budget.as_deref(), r.as_ref()) {
        b.check(r)?;
    }
    let ins = legacy::instruction(content, "train")?;
    let own = opts.local_dp.map_or(OwnDp::default(), |l| OwnDp {
        clip: Some(l.clipping_norm),
        noise_std: Some(l.std_dev()),
    });
    let u = round::train_update(learner, opts, ins.arrays, &ins.config, round, own, now).await?;
    let names = ins.arrays.0.iter().map(|(k, _)| k.clone());
    let out = crate::records::ArrayRecord(names.zip(u.arrays).collect());
    let (count, metrics) = match opts.share_metrics {
        ShareMetrics::All => (
            u.stats.examples as i64,
            vec![
                ("train_loss".to_string(), MetricValue::Float(u.stats.loss)),
                (
                    "train_accuracy".to_string(),
                    MetricValue::Float(u.stats.accuracy),
                ),
            ],
        ),
        ShareMetrics::Minimal => (rounded_count(u.stats.examples), Vec::new()),
    };
    let out = if ins.layout == Layout::Legacy {
        legacy::legacy_names(out)
    } else {
        out
    };
    let reply = legacy::fit_reply(ins.layout, out, count, MetricRecord(metrics));
    let (mut epsilon, mut epsilon_own, mut delta) = (None, None, None);
    if let (Some(b), Some(r)) = (budget, r) {
        b.spend(&r);
        let (e, o) = b.epsilon();
        (epsilon, epsilon_own, delta) = (Some(e), Some(o), Some(b.delta));
    }
    Ok((
        reply,
        Event::Trained {
            round,
            stats: u.stats,
            update_norm: u.update_norm,
            clipped_to: u.clipped_to,
            noise_std: u.noise_std,
            seconds: u.seconds,
            secagg: false,
            epsilon,
            epsilon_own,
            delta,
        },
    ))
}

/// The node's reason for not sending evaluation results.
pub const EVALUATION_NOT_SHARED: &str = "this node does not send evaluation results of parameters the server chose (share metrics 'minimal'; the node evaluated them locally only)";

/// An evaluate instruction: the global parameters scored on the local test data; the result
/// is sent only with [`ShareMetrics::All`] (otherwise the reply is `None` and the caller
/// sends an error reply).
async fn handle_evaluate<L: Learner>(
    learner: &mut L,
    opts: &NodeOptions,
    content: &RecordDict,
    round: u64,
) -> Result<(Option<RecordDict>, Event)> {
    let ins = legacy::instruction(content, "evaluate")?;
    check_fit(ins.arrays, &learner.params())?;
    let dev = learner.device().clone();
    let values = round::upload(&dev, ins.arrays)?;
    learner.set_params(&values)?;
    let stats = learner.evaluate().await?;
    let shared = opts.share_metrics == ShareMetrics::All;
    let reply = shared.then(|| {
        legacy::evaluate_reply(
            ins.layout,
            stats.examples as i64,
            stats.loss,
            MetricRecord(vec![(
                "accuracy".into(),
                MetricValue::Float(stats.accuracy),
            )]),
        )
    });
    Ok((
        reply,
        Event::Evaluated {
            round,
            stats,
            arrays: ins.arrays.clone(),
            shared,
        },
    ))
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
    let mut limits = MessageLimits::for_model(&shapes, opts.message_margin)?;
    if opts.secagg {
        // SecAggPlusWorkflow's global parameters come back as float64
        limits = MessageLimits::for_model_f64(&shapes, opts.message_margin)?;
    }
    let mut budget = match opts.dp_delta() {
        Some(delta) => Some(Budget::new(delta, opts.max_epsilon)?),
        None => None,
    };
    let mut secure: Option<SecureRound> = None;
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
        let secagg_cfg = if kind == "train" {
            secure_round::configs(&content).cloned()
        } else {
            None
        };
        let stage = secagg_cfg
            .as_ref()
            .and_then(|c| crate::secagg::stage_of(c).ok())
            .map(|st| st.name().to_string());
        let cfg = legacy::instruction(&content, &kind).ok().map(|i| i.config);
        let round = round_of(&md, cfg.as_ref());
        if on_event(&Event::Received {
            round,
            kind: kind.clone(),
            bytes,
            stage: stage.clone(),
        })
        .is_break()
        {
            return Err(FlowerError::Stopped);
        }
        if kind == "train" && secagg_cfg.is_none() && summary.rounds_trained >= opts.max_rounds {
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
        let handled: Result<(Option<RecordDict>, Vec<Event>, bool)> =
            match (kind.as_str(), &secagg_cfg) {
                ("train", Some(cfg)) => {
                    if secure.is_none() {
                        secure = Some(SecureRound::new(s.node_id)?);
                    }
                    let st = secure.as_mut().expect("made above");
                    secure_round::handle(
                        st,
                        learner,
                        opts,
                        budget.as_mut(),
                        &content,
                        cfg,
                        round,
                        summary.rounds_trained,
                        || t.now(),
                    )
                    .await
                    .map(|h| (Some(h.reply), h.events, h.trained))
                }
                ("train", None) => {
                    handle_train(learner, opts, budget.as_mut(), &content, round, || t.now())
                        .await
                        .map(|(r, e)| (Some(r), vec![e], true))
                }
                ("evaluate", _) => handle_evaluate(learner, opts, &content, round)
                    .await
                    .map(|(r, e)| (r, vec![e], false)),
                (other, _) => Err(FlowerError::Protocol(format!(
                    "message type '{other}' is not supported (train, evaluate)"
                ))),
            };
        match handled {
            Ok((reply, events, trained)) => {
                if trained {
                    summary.rounds_trained += 1;
                }
                if kind == "evaluate" {
                    summary.evaluations += 1;
                }
                let mut stop = false;
                for ev in &events {
                    stop |= on_event(ev).is_break();
                }
                let sent = match &reply {
                    Some(r) => s.reply(&md, Some(r), None).await?,
                    None => {
                        let reason =
                            format!("pixelgrad node {}: {EVALUATION_NOT_SHARED}", s.node_id);
                        s.error_reply(&md, ERROR_MOD_FAILED_PRECONDITION, &reason)
                            .await?
                    }
                };
                if on_event(&Event::Replied {
                    round,
                    kind: kind.clone(),
                    bytes: sent,
                    stage: stage.clone(),
                })
                .is_break()
                    || stop
                {
                    return Err(FlowerError::Stopped);
                }
            }
            Err(e) => {
                let code = if matches!(
                    e,
                    FlowerError::Protocol(_)
                        | FlowerError::Limit { .. }
                        | FlowerError::Budget { .. }
                ) {
                    ERROR_MOD_FAILED_PRECONDITION
                } else {
                    ERROR_CLIENT_APP_RAISED
                };
                let reason = format!("pixelgrad node {}: {e}", s.node_id);
                let _ = s.error_reply(&md, code, &reason).await;
                let _ = on_event(&Event::Failed { round, reason });
                // A mismatch or a failed local step ends the node; a message it cannot run
                // (unknown type, a SecAgg+ stage it refuses), a round it refuses (too many
                // epochs, its privacy budget spent, a plain update when it only sends masked
                // ones) does not.
                let goes_on = matches!(e, FlowerError::Limit { .. } | FlowerError::Budget { .. })
                    || (matches!(e, FlowerError::Protocol(_))
                        && (secagg_cfg.is_some()
                            || opts.secagg
                            || (kind != "train" && kind != "evaluate")));
                if !goes_on {
                    return Err(e);
                }
            }
        }
        idle_since = t.now();
    }
}
