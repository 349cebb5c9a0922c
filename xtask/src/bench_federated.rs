//! `cargo xtask bench-federated [--nodes 4,8] [--rounds R] [--dataset digits|idx:DIR] [--alpha A]
//! [--epochs E] [--lr X] [--browsers K [--backends LIST]] [--privacy] [--debug-cli] [--no-build]
//! [--out FILE]`:
//! what SecAgg+ costs per round against plain FedAvg, and what it does to accuracy, for
//! federations of native nodes on the embedded digits or MNIST (`idx:../shared/data/mnist`),
//! each node on a Dirichlet(A) label shard (non-IID; the same model, data split and seeds in
//! both modes). With `--browsers K`, K of each federation's nodes are headless Chromium tabs
//! (backends from `--backends`, in turn) and the rest native. Each (nodes, mode) is one
//! `cargo xtask federated --json` run through the pinned flwr SuperLink; from its summary:
//!
//! - bytes up and down per node per round (the nodes' own counts of Fleet API bodies);
//! - client compute per stage: local training, and each SecAgg+ stage the node computes (key
//!   generation, share encryption, masking, unmasking shares), mean over nodes and rounds;
//! - server time per round (the ServerApp's wall time for the round) and, under SecAgg+, per
//!   stage (Flower's `SecAggPlusWorkflow`, timed around each stage: sending, waiting for the
//!   replies and the server's own work).
//!
//! With `--privacy` it runs every privacy mode instead, on the same shards and seeds: plain,
//! client-side clipping (the shipped default and a noise multiplier of 1), local DP, SecAgg+,
//! SecAgg+ with local DP and SecAgg+ with distributed DP ([`PRIVACY_MODES`]), recording each
//! one's final accuracy, the cumulative ε the nodes report, and for client-side clipping the ε
//! the server's own noise would give (`server_epsilon` of `xtask federated`): the numbers of
//! the federated guide's privacy table, from one run.
//!
//! Writes `web/bench/results/federated-<date>.json` (`federated-tabs-<date>.json` with tabs,
//! `privacy-<date>.json` with `--privacy`; date, commit and machine) and regenerates
//! `docs/benchmarks.md`. A benchmark, never a test:
//! nothing is asserted.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug)]
struct Options {
    nodes: Vec<usize>,
    rounds: usize,
    debug_cli: bool,
    build: bool,
    out: Option<PathBuf>,
    dataset: String,
    alpha: String,
    epochs: usize,
    lr: String,
    privacy: bool,
    /// Nodes of each federation that are browser tabs (the rest are native).
    browsers: usize,
    backends: Option<String>,
}

/// One federation of a run: SecAgg+ or not, and the `--dp` of `xtask federated`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Mode {
    secagg: bool,
    dp: &'static str,
}

/// The modes of the cost comparison (the default).
const COST_MODES: &[Mode] = &[Mode { secagg: false, dp: "off" }, Mode { secagg: true, dp: "off" }];

/// The modes of `--privacy`: the federated guide's table, with the settings the guide and
/// `scripts/flower-tests.sh` use (client clipping: the default C = 5, Z = 0.001, then Z = 1;
/// local DP: epsilon 8 per round at delta 1e-5, clip 1; distributed DP: Z = 0.3, clip 1).
const PRIVACY_MODES: &[Mode] = &[
    Mode { secagg: false, dp: "off" },
    Mode { secagg: false, dp: "client-clip" },
    Mode { secagg: false, dp: "client-clip:5,1" },
    Mode { secagg: false, dp: "local:8,1e-5,1" },
    Mode { secagg: true, dp: "off" },
    Mode { secagg: true, dp: "local:8,1e-5,1" },
    Mode { secagg: true, dp: "distributed:0.3,1,1e-5" },
];

impl Mode {
    fn name(&self) -> &'static str {
        if self.secagg {
            "secagg+"
        } else {
            "plain"
        }
    }
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        nodes: vec![4, 8],
        rounds: 2,
        debug_cli: false,
        build: true,
        out: None,
        dataset: "digits".into(),
        alpha: "0.5".into(),
        epochs: 1,
        lr: "0.005".into(),
        privacy: false,
        browsers: 0,
        backends: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--nodes" => {
                let v = val("--nodes")?;
                o.nodes = v
                    .split(',')
                    .map(|x| x.trim().parse::<usize>().ok().filter(|&n| n >= 3).ok_or(format!("--nodes '{v}': whole numbers >= 3")))
                    .collect::<Result<_, _>>()?;
            }
            "--rounds" => {
                let v = val("--rounds")?;
                o.rounds = v.parse().ok().filter(|&r| r >= 1).ok_or(format!("--rounds '{v}': a whole number >= 1"))?;
            }
            "--dataset" => o.dataset = val("--dataset")?,
            "--alpha" => {
                let v = val("--alpha")?;
                v.parse::<f64>().ok().filter(|&a| a > 0.0).ok_or(format!("--alpha '{v}': a positive number"))?;
                o.alpha = v;
            }
            "--epochs" => {
                let v = val("--epochs")?;
                o.epochs = v.parse().ok().filter(|&e| e >= 1).ok_or(format!("--epochs '{v}': a whole number >= 1"))?;
            }
            "--lr" => {
                let v = val("--lr")?;
                v.parse::<f64>().ok().filter(|&x| x > 0.0).ok_or(format!("--lr '{v}': a positive number"))?;
                o.lr = v;
            }
            "--privacy" => o.privacy = true,
            "--browsers" => {
                let v = val("--browsers")?;
                o.browsers = v.parse().map_err(|_| format!("--browsers '{v}': a whole number"))?;
            }
            "--backends" => o.backends = Some(val("--backends")?),
            "--debug-cli" => o.debug_cli = true,
            "--no-build" => o.build = false,
            "--out" => o.out = Some(PathBuf::from(val("--out")?)),
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    if o.nodes.iter().any(|&n| n < o.browsers) {
        return Err(format!("--browsers {} is more than a federation of {:?} nodes holds", o.browsers, o.nodes));
    }
    Ok(o)
}

/// SecAgg+ with every node sharing with every other, reconstructable by a majority.
fn secagg_of(nodes: usize) -> (usize, usize) {
    (nodes, nodes / 2 + 1)
}

pub fn main(args: &[String]) -> i32 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match parse(args).and_then(|o| run(&o, &root)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask bench-federated: {e}");
            1
        }
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One row of the result from a federation's summary line.
fn row(nodes: usize, secagg: Option<(usize, usize)>, dp: &str, rounds: usize, s: &serde_json::Value) -> serde_json::Value {
    let natives: Vec<&serde_json::Value> = s["clients"].as_array().into_iter().flatten().filter(|c| c["kind"] == "native").collect();
    let per_round = |key: &str| mean(&natives.iter().filter_map(|c| c[key].as_f64()).map(|b| b / rounds as f64).collect::<Vec<_>>());
    let mut stages: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for c in &natives {
        for t in c["timings"].as_array().into_iter().flatten() {
            if let (Some(st), Some(sec)) = (t["stage"].as_str(), t["seconds"].as_f64()) {
                stages.entry(st.to_string()).or_default().push(sec);
            }
        }
    }
    let client: serde_json::Map<String, serde_json::Value> = stages.iter().map(|(k, v)| (k.clone(), mean(v).into())).collect();
    let rows = s["per_round"].as_array().cloned().unwrap_or_default();
    let mut last = 0.0;
    let mut round_seconds = Vec::new();
    let mut server_stages: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for r in &rows {
        let t = r["seconds"].as_f64().unwrap_or(last);
        round_seconds.push(t - last);
        last = t;
        for (k, v) in r["server_stage_seconds"].as_object().into_iter().flatten() {
            if let Some(x) = v.as_f64() {
                server_stages.entry(k.clone()).or_default().push(x);
            }
        }
    }
    let server: serde_json::Map<String, serde_json::Value> = server_stages.iter().map(|(k, v)| (k.clone(), mean(v).into())).collect();
    serde_json::json!({
        "nodes": nodes,
        "mode": if secagg.is_some() { "secagg+" } else { "plain" },
        "secagg": secagg.map(|(sh, t)| serde_json::json!({"shares": sh, "threshold": t})),
        "bytesUpPerNodeRound": per_round("bytes_up"),
        "bytesDownPerNodeRound": per_round("bytes_down"),
        "clientSeconds": client,
        "serverRoundSeconds": mean(&round_seconds),
        "serverStageSeconds": server,
        "trainReplies": rows.iter().map(|r| r["train_replies"].clone()).collect::<Vec<_>>(),
        "finalAccuracy": s["final_accuracy"],
        "nodeKinds": s["clients"].as_array().into_iter().flatten().map(|c| if c["kind"] == "browser" { format!("tab:{}", c["backend"].as_str().unwrap_or("?")) } else { "native".to_string() }).collect::<Vec<_>>(),
        "dp": dp,
        "dpLabel": s["dp"],
        "epsilon": s["epsilon"],
        "delta": s["delta"],
        "serverEpsilon": s["server_epsilon"],
    })
}

fn run(o: &Options, root: &Path) -> Result<(), String> {
    let date = crate::machine::utc_now()?;
    let machine = crate::machine::record(root);
    let xtask = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut rows = Vec::new();
    let mut built = !o.build;
    let modes = if o.privacy { PRIVACY_MODES } else { COST_MODES };
    for &nodes in &o.nodes {
        for mode in modes {
            let secagg = mode.secagg.then(|| secagg_of(nodes));
            let mut c = Command::new(&xtask);
            c.current_dir(root)
                .args(["federated", "--rounds", &o.rounds.to_string()])
                .args(["--browsers", &o.browsers.to_string(), "--native", &(nodes - o.browsers).to_string()])
                .args(["--dataset", &o.dataset, "--alpha", &o.alpha, "--epochs", &o.epochs.to_string(), "--lr", &o.lr, "--json"])
                .args(["--dp", mode.dp]);
            if let Some((sh, t)) = secagg {
                c.args(["--secagg", &format!("{sh},{t}")]);
            }
            if let Some(b) = &o.backends {
                c.args(["--backends", b]);
            }
            if o.debug_cli {
                c.arg("--debug-cli");
            }
            if built {
                c.arg("--no-build");
            }
            built = true;
            eprintln!("xtask bench-federated: {nodes} nodes, {}, dp {}", if mode.secagg { "SecAgg+" } else { "plain" }, mode.dp);
            let out = c.output().map_err(|e| format!("xtask federated: {e}"))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let summary = stdout.lines().rev().find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
            match (out.status.success(), summary) {
                (true, Some(s)) => rows.push(row(nodes, secagg, mode.dp, o.rounds, &s)),
                _ => {
                    let err = String::from_utf8_lossy(&out.stderr).lines().rfind(|l| !l.trim().is_empty()).unwrap_or("failed").to_string();
                    eprintln!("  {err}");
                    rows.push(serde_json::json!({"nodes": nodes, "mode": mode.name(), "dp": mode.dp, "error": err}));
                }
            }
        }
    }
    let result = serde_json::json!({
        "date": date,
        "machine": machine,
        "about": format!(
            "`cargo xtask federated --browsers {} --native {} --dataset {} --alpha {} --epochs {} --lr {} --rounds {}{}` per row ({} build of the CLI), {} on the same non-IID shards and seeds; final accuracy of the global model on the whole test set; every node and the SuperLink on this one machine, so client and server times include sharing its cores.",
            o.browsers,
            if o.browsers == 0 { "N".to_string() } else { format!("N-{}", o.browsers) },
            o.dataset,
            o.alpha,
            o.epochs,
            o.lr,
            o.rounds,
            o.backends.as_ref().map(|b| format!(" --backends {b}")).unwrap_or_default(),
            if o.debug_cli { "debug" } else { "release" },
            if o.privacy {
                "with each row's `--dp`, plain FedAvg or through flwr's SecAggPlusWorkflow (N shares, threshold N/2 + 1)"
            } else {
                "plain FedAvg and through flwr's SecAggPlusWorkflow (N shares, threshold N/2 + 1)"
            }
        ),
        "rows": rows,
    });
    let stamp = date[..19].replace(':', "-");
    let kind = if o.privacy {
        "privacy"
    } else if o.browsers > 0 {
        "federated-tabs"
    } else {
        "federated"
    };
    let out = o.out.clone().unwrap_or_else(|| root.join("web/bench/results").join(format!("{kind}-{stamp}.json")));
    crate::bench_report::write_result("bench-federated", &out, &result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_becomes_per_node_per_round_figures() {
        let s = serde_json::json!({
            "clients": [
                {"kind": "native", "bytes_up": 400, "bytes_down": 800, "timings": [
                    {"round": 1, "stage": "train", "seconds": 1.0}, {"round": 1, "stage": "setup", "seconds": 0.25},
                    {"round": 2, "stage": "train", "seconds": 3.0}]},
                {"kind": "native", "bytes_up": 200, "bytes_down": 400, "timings": []},
                {"kind": "browser", "bytes_up": 1e9},
            ],
            "per_round": [
                {"round": 1, "seconds": 10.0, "train_replies": 2, "server_stage_seconds": {"setup": 1.0}},
                {"round": 2, "seconds": 16.0, "train_replies": 2, "server_stage_seconds": {"setup": 3.0}},
            ],
            "final_accuracy": 0.9,
        });
        let r = row(2, Some((2, 2)), "off", 2, &s);
        assert_eq!(r["bytesUpPerNodeRound"], 150.0);
        assert_eq!(r["bytesDownPerNodeRound"], 300.0);
        assert_eq!(r["clientSeconds"]["train"], 2.0);
        assert_eq!(r["clientSeconds"]["setup"], 0.25);
        assert_eq!(r["serverRoundSeconds"], 8.0);
        assert_eq!(r["serverStageSeconds"]["setup"], 2.0);
        assert_eq!(r["mode"], "secagg+");
    }

    #[test]
    fn options_refuse_federations_too_small_for_secagg() {
        assert!(parse(&["--nodes".into(), "2".into()]).is_err());
        assert_eq!(parse(&["--nodes".into(), "3,5".into()]).unwrap().nodes, vec![3, 5]);
        assert_eq!(secagg_of(8), (8, 5));
    }

    #[test]
    fn options_take_a_dataset_and_its_shards() {
        let a: Vec<String> = ["--dataset", "idx:../shared/data/mnist", "--alpha", "0.3", "--epochs", "2", "--lr", "0.01"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let o = parse(&a).unwrap();
        assert_eq!((o.dataset.as_str(), o.alpha.as_str(), o.epochs, o.lr.as_str()), ("idx:../shared/data/mnist", "0.3", 2, "0.01"));
        assert_eq!(parse(&[]).unwrap().dataset, "digits");
        assert!(parse(&["--alpha".into(), "0".into()]).is_err());
        assert!(parse(&["--epochs".into(), "0".into()]).is_err());
    }

    #[test]
    fn browser_tabs_are_part_of_each_federation() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse(&a(&["--nodes", "4", "--browsers", "3", "--backends", "webgpu,webgl,cpu"])).unwrap();
        assert_eq!((o.browsers, o.backends.as_deref()), (3, Some("webgpu,webgl,cpu")));
        assert!(parse(&a(&["--nodes", "4,8", "--browsers", "5"])).unwrap_err().contains("more than a federation"));
        assert_eq!(parse(&[]).unwrap().browsers, 0);
    }

    #[test]
    fn the_privacy_run_covers_every_mode_of_the_guides_table() {
        assert!(parse(&["--privacy".into()]).unwrap().privacy);
        // every mode's --dp is one `xtask federated` accepts, and distributed DP only with SecAgg+
        for m in PRIVACY_MODES {
            assert!(crate::federated::parse_dp(m.dp).is_ok(), "{m:?}");
            assert!(!m.dp.starts_with("distributed") || m.secagg, "{m:?}");
        }
        let has = |secagg: bool, prefix: &str| PRIVACY_MODES.iter().any(|m| m.secagg == secagg && m.dp.starts_with(prefix));
        assert!(has(false, "off") && has(false, "client-clip") && has(false, "local:"));
        assert!(has(true, "off") && has(true, "local:") && has(true, "distributed:"));
        assert_eq!(COST_MODES.iter().map(Mode::name).collect::<Vec<_>>(), ["plain", "secagg+"]);
    }

    #[test]
    fn a_row_carries_the_privacy_the_federation_reported() {
        let s = serde_json::json!({"clients": [], "per_round": [], "final_accuracy": 0.5, "dp": "client-clip (clipping norm 5, noise multiplier 1)", "epsilon": null, "delta": null, "server_epsilon": 12.5});
        let r = row(4, None, "client-clip:5,1", 3, &s);
        assert_eq!(
            (r["dp"].as_str(), r["serverEpsilon"].as_f64(), r["mode"].as_str()),
            (Some("client-clip:5,1"), Some(12.5), Some("plain"))
        );
    }
}
