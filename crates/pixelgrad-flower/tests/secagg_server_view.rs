//! What the server holds in a SecAgg+ round: five nodes run pixelgrad's SecAgg+ client
//! (OS randomness, as in a real round) against a server that routes their messages as flwr's
//! `SecAggPlusWorkflow` does and unmasks with [`aggregate`] (itself checked byte for byte
//! against flwr's workflow in tests/secagg_golden.rs).
//!
//! - What one node sends (its masked vector, every byte the server gets from it besides its
//!   public keys and the key shares encrypted for other nodes) is uncorrelated with that
//!   node's true update: |corr| < 0.05 over 20 000 values (the standard error is 0.007),
//!   while the same node's quantised but unmasked vector, what it would send without the
//!   masks, correlates above 0.99 (so the measure can tell).
//! - The unmasked aggregate equals the plain mean of the updates within the quantisation
//!   error (one step of 2 c / T per value), also when a node leaves after key sharing (the
//!   mean is then over the nodes that sent a vector).

use std::collections::HashMap;

use pixelgrad_flower::noise::Noise;
use pixelgrad_flower::npy;
use pixelgrad_flower::records::{ConfigRecord, ConfigValue};
use pixelgrad_flower::secagg::protocol::ids_value;
use pixelgrad_flower::secagg::{aggregate, MaskInput, OsEntropy, SecAggClient};

const N: usize = 5;
const SIZE: usize = 20_000;
const CLIP: f64 = 8.0;
const TARGET: u64 = 1 << 22;

fn s(v: &str) -> ConfigValue {
    ConfigValue::Str(v.into())
}

fn cfg(stage: &str, mut rest: Vec<(String, ConfigValue)>) -> ConfigRecord {
    rest.insert(0, ("stage".into(), s(stage)));
    ConfigRecord(rest)
}

fn bytes_list(c: &ConfigRecord, k: &str) -> Vec<Vec<u8>> {
    match c.get(k) {
        Some(ConfigValue::BytesList(l)) => l.clone(),
        Some(ConfigValue::BoolList(l)) if l.is_empty() => Vec::new(),
        other => panic!("{k}: {other:?}"),
    }
}

fn ids(c: &ConfigRecord, k: &str) -> Vec<u64> {
    match c.get(k) {
        Some(ConfigValue::IntList(l)) => l.iter().map(|&x| x as u64).collect(),
        Some(ConfigValue::UintList(l)) => l.clone(),
        Some(ConfigValue::BoolList(l)) if l.is_empty() => Vec::new(),
        other => panic!("{k}: {other:?}"),
    }
}

fn corr(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    sab / (saa * sbb).sqrt()
}

struct Outcome {
    /// What the server received from node 0 in the collect stage, per array (decoded npy).
    node0_sent: Vec<Vec<i64>>,
    updates: Vec<Vec<f32>>,
    /// Nodes that sent a masked vector.
    active: Vec<usize>,
    mean: Vec<Vec<f64>>,
}

/// One round; the node at `drop` (if any) leaves after sharing its keys.
fn round(drop: Option<usize>) -> Outcome {
    let nids: Vec<u64> = (0..N as u64).map(|i| 7_000_000_000_000 + 977 * i).collect();
    let mut noise = Noise::from_os().unwrap();
    let updates: Vec<Vec<f32>> = (0..N)
        .map(|_| (0..SIZE).map(|_| (0.5 * noise.standard()) as f32).collect())
        .collect();
    let mut nodes: Vec<(SecAggClient, OsEntropy)> = nids
        .iter()
        .map(|&n| (SecAggClient::new(n), OsEntropy::new().unwrap()))
        .collect();
    let setup = cfg(
        "setup",
        vec![
            ("sample_num".into(), ConfigValue::Int(N as i64)),
            ("share_num".into(), ConfigValue::Int(N as i64)),
            ("threshold".into(), ConfigValue::Int(3)),
            ("clipping_range".into(), ConfigValue::Float(CLIP)),
            ("target_range".into(), ConfigValue::Int(TARGET as i64)),
            ("mod_range".into(), ConfigValue::Int(1 << 32)),
            ("max_weight".into(), ConfigValue::Float(1.0)),
        ],
    );
    // setup: public keys
    let mut pks: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (c, e) in &mut nodes {
        let out = c.setup(&setup, e).unwrap();
        let b = |k: &str| match out.get(k) {
            Some(ConfigValue::Bytes(b)) => b.clone(),
            o => panic!("{k}: {o:?}"),
        };
        pks.push((b("pk1"), b("pk2")));
    }
    let setup_params = nodes[0].0.setup_params().cloned().unwrap();
    // share keys: every node is every node's neighbour (5 shares of 5 nodes)
    let keys: Vec<(String, ConfigValue)> = nids
        .iter()
        .zip(&pks)
        .map(|(n, (a, b))| {
            (
                n.to_string(),
                ConfigValue::BytesList(vec![a.clone(), b.clone()]),
            )
        })
        .collect();
    let mut forward: HashMap<u64, (Vec<u64>, Vec<Vec<u8>>)> = HashMap::new();
    let mut neighbours: HashMap<u64, Vec<u64>> = HashMap::new();
    for (i, (c, e)) in nodes.iter_mut().enumerate() {
        let out = c
            .share_keys(&cfg("share_keys", keys.clone()), e, 1_700_000_000)
            .unwrap();
        neighbours.insert(nids[i], c.neighbours().to_vec());
        for (dst, ct) in ids(&out, "dsts").into_iter().zip(bytes_list(&out, "ctxts")) {
            let f = forward.entry(dst).or_default();
            f.0.push(nids[i]);
            f.1.push(ct);
        }
    }
    // collect masked vectors from every node still there
    let active: Vec<usize> = (0..N).filter(|&i| Some(i) != drop).collect();
    let mut masked = Vec::new();
    let mut node0_sent = Vec::new();
    for &i in &active {
        let (c, e) = &mut nodes[i];
        let (srcs, cts) = forward.remove(&nids[i]).unwrap();
        c.receive_shares(&cfg(
            "collect_masked_vectors",
            vec![
                ("ctxts".into(), ConfigValue::BytesList(cts)),
                ("srcs".into(), ids_value(&srcs)),
            ],
        ))
        .unwrap();
        let arrays = vec![(vec![SIZE], updates[i].clone())];
        let out = c
            .mask(
                &MaskInput {
                    arrays: &arrays,
                    weight: 1.0,
                },
                e,
            )
            .unwrap();
        let sent = bytes_list(&out, "masked_params");
        if i == 0 {
            node0_sent = sent.iter().map(|b| npy::decode_i64(b).unwrap().1).collect();
        }
        masked.push(sent);
    }
    // unmask
    let active_ids: Vec<u64> = active.iter().map(|&i| nids[i]).collect();
    let dead_ids: Vec<u64> = drop.map(|d| vec![nids[d]]).unwrap_or_default();
    let mut shares: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    for &i in &active {
        let out = nodes[i]
            .0
            .unmask(&cfg(
                "unmask",
                vec![
                    ("active_nids".into(), ids_value(&active_ids)),
                    ("dead_nids".into(), ids_value(&dead_ids)),
                ],
            ))
            .unwrap();
        for (owner, sh) in ids(&out, "nids")
            .into_iter()
            .zip(bytes_list(&out, "shares"))
        {
            shares.entry(owner).or_default().push(sh);
        }
    }
    let pk1: HashMap<u64, Vec<u8>> = nids
        .iter()
        .zip(&pks)
        .map(|(n, (a, _))| (*n, a.clone()))
        .collect();
    let sum = aggregate::sum_masked(&masked, setup_params.mod_range).unwrap();
    let mean = aggregate::unmask(
        sum,
        &setup_params,
        &active_ids,
        &dead_ids,
        &shares,
        &neighbours,
        &pk1,
    )
    .unwrap();
    Outcome {
        node0_sent,
        updates,
        active,
        mean,
    }
}

fn check(o: &Outcome) {
    // what node 0 sent: [q_ratio], then its masked, quantised update
    assert_eq!(o.node0_sent.len(), 2);
    let sent: Vec<f64> = o.node0_sent[1].iter().map(|&v| v as f64).collect();
    let truth: Vec<f64> = o.updates[0].iter().map(|&v| v as f64).collect();
    let c = corr(&sent, &truth);
    assert!(
        c.abs() < 0.05,
        "what node 0 sent correlates with its update: {c}"
    );
    // the control: the quantised vector without masks is the update, nearly exactly
    let quantised: Vec<f64> = truth
        .iter()
        .map(|x| ((x + CLIP) * TARGET as f64 / (2.0 * CLIP)).floor())
        .collect();
    let c_plain = corr(&quantised, &truth);
    assert!(c_plain > 0.99, "control correlation {c_plain}");
    // the unmasked aggregate is the plain mean within one quantisation step
    let step = 2.0 * CLIP / TARGET as f64;
    let mut worst = 0f64;
    for j in 0..SIZE {
        let plain = o
            .active
            .iter()
            .map(|&i| o.updates[i][j] as f64)
            .sum::<f64>()
            / o.active.len() as f64;
        worst = worst.max((o.mean[0][j] - plain).abs());
    }
    assert!(
        worst <= step,
        "aggregate off the plain mean by {worst} (> one step {step})"
    );
    eprintln!("corr(sent, update) = {c:.4}; control {c_plain:.4}; max |mean - plain| = {worst:.2e} (step {step:.2e})");
}

#[test]
fn the_server_sees_masked_noise_and_recovers_the_sum() {
    check(&round(None));
}

#[test]
fn the_same_holds_when_a_node_leaves_after_key_sharing() {
    let o = round(Some(3));
    assert_eq!(o.active.len(), N - 1);
    check(&o);
}
