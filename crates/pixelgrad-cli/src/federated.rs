//! `pixelgrad federated`: this machine as a node of a Flower federation (see pixelgrad-flower).

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

use clap::Args;
use pixelgrad::flower::auth::NodeKey;
use pixelgrad::flower::dp::LocalDp;
use pixelgrad::flower::fleet::FleetClient;
use pixelgrad::flower::keyfile::{self, KeyFile};
use pixelgrad::flower::learner::{ModuleLearner, Shard};
use pixelgrad::flower::node::{self, Event, NodeOptions};
use pixelgrad::flower::npy;
use pixelgrad::flower::partition;
use pixelgrad::flower::privacy::{DistributedDp, ShareMetrics};
use pixelgrad::flower::transport::{NativeTransport, TransportOptions};
use pixelgrad::nn::presets::SPEC_KEY;
use pixelgrad::nn::{io, Module, OptimizerKind};

use crate::dataset::{self, DatasetSpec};
use crate::model::{self, ModelArg};
use crate::{backend, CliResult, Context};

/// Metadata key listing the parameter names in the model's order (the ServerApp builds its
/// ArrayRecord in that order).
pub const ORDER_KEY: &str = "pixelgrad.order";

#[derive(Args)]
pub struct FederatedArgs {
    /// The SuperLink's Fleet API, e.g. https://superlink.example:9093 (or http:// on a trusted
    /// network)
    #[arg(long)]
    pub superlink: Option<String>,
    /// PEM file of the CA certificates trusted for an https:// SuperLink (as Flower's
    /// SuperNode takes it); without it, Mozilla's root certificates
    #[arg(long, value_name = "FILE")]
    pub root_certificates: Option<PathBuf>,
    /// The node's key, kept across runs (PKCS#8 PEM, made with mode 0600 if missing; the public
    /// key goes to FILE.pub for `flwr supernode register`). Without it, a fresh key per run
    #[arg(long, value_name = "FILE")]
    pub node_key: Option<PathBuf>,
    /// With --node-key: make the key if needed, print its public key (OpenSSH line) and exit
    #[arg(long, requires = "node_key")]
    pub print_public_key: bool,
    /// Seconds one request to the SuperLink may take, answer included
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Most local epochs a server may ask for in one round (more is refused with an error reply)
    #[arg(long, default_value_t = node::DEFAULT_MAX_EPOCHS)]
    pub max_epochs: usize,
    /// Most rounds this node trains in one run
    #[arg(long, default_value_t = node::DEFAULT_MAX_ROUNDS)]
    pub max_rounds: u64,
    /// digits (embedded default) | idx:DIR | csv:PATH
    #[arg(long, default_value = "digits")]
    pub dataset: String,
    /// mlp | cnn | seed-mlp | FILE.json (every node and the ServerApp's initial file must agree)
    #[arg(long, default_value = "mlp")]
    pub model: String,
    /// This node's share of the training set: I/N (0-based)
    #[arg(long, default_value = "0/1")]
    pub partition: String,
    /// Dirichlet concentration of the label shards (non-IID; smaller = more skewed).
    /// Without it the shards are IID.
    #[arg(long)]
    pub alpha: Option<f64>,
    /// auto | cpu | webgpu | webgl
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// Seed of the data split and the partitions (the same on every node)
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Local epochs, batch size and learning rate when the server's config does not say
    #[arg(long, default_value_t = 1)]
    pub epochs: usize,
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    #[arg(long, default_value_t = 0.001)]
    pub lr: f32,
    /// Local differential privacy (Flower's LocalDpMod): EPSILON,DELTA,CLIP[,SENSITIVITY]
    /// (sensitivity defaults to the clipping norm)
    #[arg(long)]
    pub local_dp: Option<String>,
    /// Send updates only through Flower's secure aggregation (SecAgg+, the server's
    /// `SecAggPlusWorkflow`): the server learns the sum of the nodes' updates, not this
    /// node's; a plain train instruction is refused
    #[arg(long)]
    pub secagg: bool,
    /// Distributed DP under --secagg: NOISE_MULTIPLIER,CLIP,DELTA (this node clips its update
    /// to CLIP and adds its share of noise; the unmasked sum has noise multiplier
    /// NOISE_MULTIPLIER when at least the reconstruction threshold of nodes is honest)
    #[arg(long, requires = "secagg")]
    pub distributed_dp: Option<String>,
    /// The most epsilon (at the DP mode's delta) this node spends over the run: a training
    /// round that would go past it is refused with an error reply (needs --local-dp or
    /// --distributed-dp; the server cannot raise it)
    #[arg(long)]
    pub max_epsilon: Option<f64>,
    /// minimal (default: example counts rounded, no loss or accuracy, evaluation of the
    /// server's weights kept local) | all (exact counts, train metrics, evaluation results)
    #[arg(long, default_value = "minimal")]
    pub share_metrics: String,
    /// Leave the federation when the message after this SecAgg+ stage (setup, share_keys,
    /// collect_masked_vectors) arrives, without answering it: a node that disappears
    /// mid-round once the server holds its reply to that stage, for dropout tests
    #[arg(long, hide = true)]
    pub leave_after_stage: Option<String>,
    /// Write the model's initial parameters (safetensors, with the order the ServerApp needs)
    /// to FILE and exit
    #[arg(long)]
    pub write_init: Option<PathBuf>,
    /// Write this node's shards (the same --partition, --alpha and --seed split every node
    /// makes) to DIR as train_x.npy, train_y.npy, test_x.npy, test_y.npy (float32 samples,
    /// int64 labels) and exit: data for a node written in another language, such as a Flower
    /// Python SuperNode, in the same federation
    #[arg(long)]
    pub write_shard: Option<PathBuf>,
    /// Print one JSON summary as the last line of stdout
    #[arg(long)]
    pub json: bool,
}

/// The shards as `.npy` files (`np.load` reads them): samples `[n, ...sample shape]` float32,
/// labels `[n]` int64.
fn write_shard(dir: &std::path::Path, train: &Shard, test: &Shard) -> CliResult<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--write-shard {}: {e}", dir.display()))?;
    for (name, shard) in [("train", train), ("test", test)] {
        let mut shape = vec![shard.labels.len()];
        shape.extend_from_slice(&shard.sample_shape);
        let labels: Vec<i64> = shard.labels.iter().map(|&l| i64::from(l)).collect();
        for (file, bytes) in [
            (format!("{name}_x.npy"), npy::encode_f32(&shape, &shard.x)),
            (format!("{name}_y.npy"), npy::encode_i64(&[labels.len()], &labels)),
        ] {
            let path = dir.join(file);
            pixelgrad_durable::write(&path, &bytes)
                .map_err(|e| format!("--write-shard {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// `EPSILON,DELTA,CLIP[,SENSITIVITY]`.
pub fn parse_local_dp(s: &str) -> CliResult<LocalDp> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .map_err(|_| format!("--local-dp '{s}': '{x}' is not a number"))
        })
        .collect::<CliResult<_>>()?;
    match v[..] {
        [eps, delta, clip] => LocalDp::new(clip, clip, eps, delta).ctx(),
        [eps, delta, clip, sens] => LocalDp::new(clip, sens, eps, delta).ctx(),
        _ => Err(format!(
            "--local-dp '{s}' must be EPSILON,DELTA,CLIP[,SENSITIVITY]"
        )),
    }
}

/// `NOISE_MULTIPLIER,CLIP,DELTA`.
pub fn parse_distributed_dp(s: &str) -> CliResult<DistributedDp> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .map_err(|_| format!("--distributed-dp '{s}': '{x}' is not a number"))
        })
        .collect::<CliResult<_>>()?;
    match v[..] {
        [z, clip, delta] => DistributedDp::new(z, clip, delta).ctx(),
        _ => Err(format!(
            "--distributed-dp '{s}' must be NOISE_MULTIPLIER,CLIP,DELTA"
        )),
    }
}

/// The node key: from `--node-key FILE` (made if missing) or a fresh one.
fn node_key(a: &FederatedArgs, say: &dyn Fn(String)) -> CliResult<NodeKey> {
    let Some(path) = &a.node_key else {
        return NodeKey::generate().ctx();
    };
    let (key, how) = keyfile::load_or_create(path).ctx()?;
    if how == KeyFile::Created {
        say(format!(
            "made the node key {} (public key in {}; register it with `flwr supernode register {}` where the SuperLink authenticates nodes)",
            path.display(),
            keyfile::public_path(path).display(),
            keyfile::public_path(path).display()
        ));
    }
    Ok(key)
}

/// Whether `url`'s host is this machine (plain HTTP is only sensible there).
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    matches!(host, "localhost" | "[::1]") || host.starts_with("127.")
}

pub fn run(a: FederatedArgs) -> CliResult<()> {
    if a.print_public_key {
        let key = node_key(&a, &|s| eprintln!("{s}"))?;
        writeln!(std::io::stdout().lock(), "{}", key.openssh_public()).ctx()?;
        return Ok(());
    }
    let arg = ModelArg::parse(&a.model)?;
    let spec = DatasetSpec::parse(&a.dataset)?;
    let (index, n) = partition::parse_partition(&a.partition).ctx()?;
    let local_dp = a.local_dp.as_deref().map(parse_local_dp).transpose()?;
    let distributed_dp = a
        .distributed_dp
        .as_deref()
        .map(parse_distributed_dp)
        .transpose()?;
    let share_metrics = ShareMetrics::parse(&a.share_metrics).ctx()?;
    if let Some(st) = &a.leave_after_stage {
        if !["setup", "share_keys", "collect_masked_vectors"].contains(&st.as_str()) {
            return Err(format!(
                "--leave-after-stage '{st}' must be setup, share_keys or collect_masked_vectors"
            ));
        }
    }
    let say = |s: String| {
        if a.json {
            eprintln!("{s}")
        } else {
            println!("{s}")
        }
    };

    let data = dataset::load(&spec, arg.seed_view(), a.seed)?;
    let model_cfg = arg.config_for(data.shape(), data.classes())?;
    let shape = model::sample_shape(&model_cfg, data.shape())
        .map_err(|e| format!("{}: {e}", arg.name()))?;

    if let Some(path) = &a.write_init {
        let dev = pixelgrad::Device::new(pixelgrad::cpu::CpuBackend::new());
        let model = model::build(&model_cfg, &arg.name(), &dev, a.seed, data.classes())?;
        let mut names = Vec::new();
        model.visit_params(&mut |name, _| names.push(name.to_string()));
        let mut meta = HashMap::new();
        meta.insert(SPEC_KEY.to_string(), model_cfg.to_json());
        meta.insert(ORDER_KEY.to_string(), names.join(","));
        io::save(&model, path, &meta).ctx()?;
        say(format!(
            "wrote the initial {} parameters ({}) to {}",
            arg.name(),
            model.num_params(),
            path.display()
        ));
        return Ok(());
    }

    let train_parts = match a.alpha {
        Some(alpha) => partition::dirichlet(data.train.labels(), n, alpha, a.seed).ctx()?,
        None => partition::iid(data.train.len(), n, a.seed).ctx()?,
    };
    let test_parts = partition::iid(data.test.len(), n, a.seed).ctx()?;
    let per: usize = shape.iter().product();
    let sample_shape = shape.to_vec();
    let train = Shard::select(
        data.train.images(),
        data.train.labels(),
        per,
        &train_parts[index],
        &sample_shape,
    )
    .ctx()?;
    let test = Shard::select(
        data.test.images(),
        data.test.labels(),
        per,
        &test_parts[index],
        &sample_shape,
    )
    .ctx()?;
    let mut hist = vec![0usize; data.classes()];
    train.labels.iter().for_each(|&l| hist[l as usize] += 1);
    if let Some(dir) = &a.write_shard {
        write_shard(dir, &train, &test)?;
        say(format!(
            "wrote partition {index}/{n}: {} train and {} test samples (labels {hist:?}) to {}",
            train.len(),
            test.len(),
            dir.display()
        ));
        return Ok(());
    }
    let url = a
        .superlink
        .clone()
        .ok_or("--superlink URL is required (or --write-init FILE, --write-shard DIR)")?;

    let sel = backend::select(&a.backend)?;
    let dev = sel.device.clone();
    let model = model::build(&model_cfg, &arg.name(), &dev, a.seed, data.classes())?;
    say(format!("backend: {}", sel.name));
    say(format!(
        "data: {} — partition {index}/{n} ({}): {} train samples, labels {:?}; {} test samples",
        data.name,
        a.alpha
            .map(|al| format!("Dirichlet alpha {al}"))
            .unwrap_or_else(|| "IID".into()),
        train.len(),
        hist,
        test.len()
    ));
    say(format!(
        "model: {} ({} parameters)",
        model.describe(),
        model.num_params()
    ));

    let root_certificates = match &a.root_certificates {
        Some(p) => Some(
            std::fs::read(p).map_err(|e| format!("--root-certificates {}: {e}", p.display()))?,
        ),
        None => None,
    };
    if url.starts_with("http://") && !is_loopback(&url) {
        say(format!(
            "warning: {url} is plain HTTP: parameters and the node's signed identity cross the network unencrypted and can be read or replayed; use https://"
        ));
    }
    let transport = NativeTransport::with_options(
        &url,
        TransportOptions {
            timeout_s: a.timeout,
            root_certificates,
            ..Default::default()
        },
    )
    .ctx()?;
    let key = node_key(&a, &say)?;
    say(format!("node key {}", key.fingerprint()));
    let client = FleetClient::new(transport, key);
    let opts = NodeOptions {
        epochs: a.epochs,
        batch_size: a.batch_size,
        lr: a.lr,
        local_dp,
        secagg: a.secagg,
        distributed_dp,
        max_epsilon: a.max_epsilon,
        share_metrics,
        max_epochs: a.max_epochs,
        max_rounds: a.max_rounds,
        ..Default::default()
    };
    let mut learner = ModuleLearner {
        dev,
        model,
        loss: model_cfg.loss().ctx()?,
        optimizer: OptimizerKind::parse("adam").ctx()?,
        train,
        test,
        seed: a.seed.wrapping_add(index as u64),
    };
    // per training round: (round, epsilon, delta) for the JSON summary
    let mut privacy: Vec<serde_json::Value> = Vec::new();
    // per round: local training time, and each SecAgg+ stage's compute time (the benchmark's
    // client time by stage, `cargo xtask bench-federated`)
    let mut timings: Vec<serde_json::Value> = Vec::new();
    let mut left_mid_round = false;
    let mut replied_stage = false;
    let mut on_event = |e: &Event| {
        match e {
            Event::Connected { node_id } => say(format!("connected to {url} as node {node_id}")),
            Event::Received { round, kind, bytes, stage } => {
                say(format!(
                    "round {round}: {kind} message{} ({bytes} bytes)",
                    stage.as_ref().map(|s| format!(", SecAgg+ stage {s}")).unwrap_or_default()
                ));
                if replied_stage {
                    say(format!(
                        "round {round}: leaving without answering (--leave-after-stage {})",
                        a.leave_after_stage.as_deref().unwrap_or("")
                    ));
                    left_mid_round = true;
                    return ControlFlow::Break(());
                }
            }
            Event::Trained { round, stats, update_norm, clipped_to, noise_std, seconds, secagg, epsilon, epsilon_own, delta } => {
                say(format!(
                    "round {round}: trained on {} samples in {seconds:.1} s, loss {:.4}, accuracy {:.4}, update norm {update_norm:.4}{}{}{}{}",
                    stats.examples,
                    stats.loss,
                    stats.accuracy,
                    clipped_to.map(|c| format!(", clipped to {c}")).unwrap_or_default(),
                    noise_std.map(|s| format!(", DP noise std {s:.4}")).unwrap_or_default(),
                    if *secagg { ", sent masked (SecAgg+)" } else { "" },
                    match (epsilon, delta) {
                        (Some(e), Some(d)) => format!(", privacy spent: epsilon {e:.4} at delta {d:e}"),
                        _ => String::new(),
                    }
                ));
                timings.push(serde_json::json!({"round": round, "stage": "train", "seconds": seconds}));
                privacy.push(serde_json::json!({
                    "round": round,
                    "secagg": secagg,
                    "epsilon": epsilon,
                    "epsilon_own_noise": epsilon_own,
                    "delta": delta,
                }));
            }
            Event::SecAggStage { round, stage, seconds } => {
                timings.push(serde_json::json!({"round": round, "stage": stage, "seconds": seconds}));
                say(format!("round {round}: SecAgg+ {stage} computed in {seconds:.3} s"))
            }
            Event::Evaluated { round, stats, shared, .. } => say(format!(
                "round {round}: global model on {} local test samples: accuracy {:.4}, loss {:.4}{}",
                stats.examples,
                stats.accuracy,
                stats.loss,
                if *shared { "" } else { " (kept local: --share-metrics minimal)" }
            )),
            Event::Replied { round, kind, bytes, stage } => {
                say(format!("round {round}: {kind} reply sent ({bytes} bytes)"));
                replied_stage |=
                    stage.is_some() && stage.as_deref() == a.leave_after_stage.as_deref();
            }
            Event::Failed { round, reason } => say(format!("round {round}: sent an error reply: {reason}")),
            Event::Waiting => {}
            Event::Finished { rounds } => say(format!("the run finished after {rounds} training rounds")),
        }
        ControlFlow::Continue(())
    };
    let ran = pollster::block_on(node::run(&client, &mut learner, &opts, &mut on_event));
    let summary = match ran {
        Ok(s) => s,
        Err(pixelgrad::flower::FlowerError::Stopped) if left_mid_round => {
            if a.json {
                let j = serde_json::json!({"left_after_stage": a.leave_after_stage, "privacy": privacy});
                writeln!(std::io::stdout().lock(), "{j}").ctx()?;
            }
            return Ok(());
        }
        Err(e) => return Err(e.to_string()),
    };
    let last = privacy.iter().rev().find(|p| !p["epsilon"].is_null());
    if a.json {
        let j = serde_json::json!({
            "secagg": a.secagg,
            "epsilon": last.map(|p| p["epsilon"].clone()),
            "delta": last.map(|p| p["delta"].clone()),
            "max_epsilon": a.max_epsilon,
            "privacy": privacy,
            "node_id": summary.node_id,
            "run_id": summary.run_id,
            "rounds": summary.rounds_trained,
            "evaluations": summary.evaluations,
            "bytes_up": summary.traffic.up,
            "bytes_down": summary.traffic.down,
            "timings": timings,
            "backend": sel.device.kind().as_str(),
        });
        writeln!(std::io::stdout().lock(), "{j}").ctx()?;
    }
    Ok(())
}
