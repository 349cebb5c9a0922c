//! A node's privacy budget against a real SuperLink (the flower-app's FedAvg asking for 3
//! rounds): a node with local DP (Flower's LocalDpMod calibrated to ε = 1 at δ = 1e-5 per
//! round; the RDP accountant composes that to ε 0.82, 1.20, 1.50 after 1, 2, 3 rounds) and
//! `max_epsilon` 1.3 trains the 2 rounds that fit, reports the cumulative ε after each,
//! answers the third with an error reply saying so (kind `privacyBudget`), and keeps serving
//! until the run ends. Nothing in a message can
//! change the limit: it is a `NodeOptions` field, never read from the server's config.
//! Needs the flwr venv (skipped without it unless `PIXELGRAD_REQUIRE_FLWR=1`).

use std::ops::ControlFlow;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;

use pixelgrad_flower::auth::NodeKey;
use pixelgrad_flower::dp::LocalDp;
use pixelgrad_flower::fleet::FleetClient;
use pixelgrad_flower::node::{self, Event, NodeOptions};
use pixelgrad_flower::transport::NativeTransport;

mod support;
use support::{venv, SuperLink};

/// The ServerApp's initial model: the node's [4, 8, 3] MLP, zeros.
fn init_file(path: &std::path::Path) {
    let specs: [(&str, Vec<usize>); 4] = [
        ("0.weight", vec![4, 8]),
        ("0.bias", vec![8]),
        ("2.weight", vec![8, 3]),
        ("2.bias", vec![3]),
    ];
    support::init_file(path, &specs);
}

#[test]
fn a_node_refuses_rounds_past_its_maximum_epsilon() {
    let Some(bin) = venv() else { return };
    let dir = std::env::temp_dir().join(format!("pixelgrad-flower-budget-{}", std::process::id()));
    let mut sl = SuperLink::start(&bin, &dir, None, &[]);
    init_file(&dir.join("init.safetensors"));
    sl.wait();
    let app = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("flower-app");
    let rc = format!(
        "num-server-rounds=3 expected-nodes=1 round-timeout=120.0 init-file=\"{}\"",
        dir.join("init.safetensors").display()
    );
    let run = sl
        .flwr()
        .args(["run", ".", "local", "--stream", "--run-config", &rc])
        .current_dir(&app)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    sl.group.0.push(run);

    let mut l = support::tiny_learner(8);
    let client = FleetClient::new(
        NativeTransport::new(&format!("http://127.0.0.1:{}", sl.port), 10.0).unwrap(),
        NodeKey::generate().unwrap(),
    );
    let opts = NodeOptions {
        check_run_after: 1.0,
        local_dp: Some(LocalDp::new(1.0, 1.0, 1.0, 1e-5).unwrap()),
        max_epsilon: Some(1.3),
        ..Default::default()
    };
    let mut trained: Vec<(u64, f64)> = Vec::new();
    let mut refused: Vec<(u64, String)> = Vec::new();
    let summary = pollster::block_on(node::run(&client, &mut l, &opts, &mut |e| {
        match e {
            Event::Trained {
                round,
                epsilon,
                delta,
                ..
            } => {
                assert_eq!(*delta, Some(1e-5));
                trained.push((*round, epsilon.expect("epsilon reported under DP")));
            }
            Event::Failed { round, reason } => refused.push((*round, reason.clone())),
            _ => {}
        }
        ControlFlow::Continue(())
    }))
    .expect("the node serves the whole run");
    drop(sl);
    let _ = std::fs::remove_dir_all(&dir);

    // ε after each round grows, stays within the maximum, and the node stopped where the
    // next round would have passed it
    assert_eq!(trained.len(), 2, "{trained:?}");
    assert!(trained.windows(2).all(|w| w[1].1 > w[0].1), "{trained:?}");
    assert!(trained.iter().all(|t| t.1 <= 1.3), "{trained:?}");
    assert_eq!(summary.rounds_trained as usize, trained.len());
    let train_refusals: Vec<_> = refused
        .iter()
        .filter(|(_, r)| r.contains("privacy budget"))
        .collect();
    assert_eq!(train_refusals.len(), 1, "{refused:?}");
    assert_eq!(train_refusals[0].0, 3, "{refused:?}");
    assert!(
        train_refusals[0].1.contains("maximum of 1.3"),
        "{refused:?}"
    );
    eprintln!("trained {trained:?}; refused {train_refusals:?}");
}
