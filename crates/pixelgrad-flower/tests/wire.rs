//! Wire compatibility with flwr 1.42 itself, both directions, with flwr's own Python classes as
//! the oracle (`tests/flwr_oracle.py`, run by the venv `scripts/flower-venv.sh` makes):
//!
//! - a train message deflated by flwr (objects, tree, the `PullMessagesResponse` a SuperLink
//!   sends) decodes here to the same values, also with arrays split into many chunks;
//! - re-deflating that content here gives flwr's object IDs, byte for byte;
//! - a reply built here (objects and `PushMessagesRequest`) inflates in flwr to the same values;
//! - client-side clipping and local DP computed on the device match flwr's `fixedclipping_mod`
//!   and `LocalDpMod` on the same update (same norm and clipping; the noise has the same
//!   standard deviation).
//!
//! Without the venv these tests say so and pass, unless `PIXELGRAD_REQUIRE_FLWR=1` (set by
//! `scripts/test.sh`, which installs the venv first).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use pixelgrad_core::{Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_flower::dp::{self, LocalDp};
use pixelgrad_flower::limits::MessageLimits;
use pixelgrad_flower::node::reply_metadata;
use pixelgrad_flower::npy::NdArray;
use pixelgrad_flower::objects::{self, deflate_message, inflate_message};
use pixelgrad_flower::proto::{self, Node};
use pixelgrad_flower::records::{
    ArrayRecord, ConfigRecord, ConfigValue, MetricRecord, MetricValue, Record, RecordDict,
};

fn python() -> Option<PathBuf> {
    let p = std::env::var_os("PIXELGRAD_FLWR_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/flwr-venv/bin/python")
        });
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("PIXELGRAD_REQUIRE_FLWR").is_some() {
        panic!(
            "flwr venv missing at {} (run scripts/flower-venv.sh)",
            p.display()
        );
    }
    eprintln!(
        "skipped: no flwr venv at {} (run scripts/flower-venv.sh)",
        p.display()
    );
    None
}

fn oracle(py: &PathBuf, args: &[&str], stdin: Option<&str>) -> serde_json::Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/flwr_oracle.py");
    let mut child = Command::new(py)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the flwr oracle");
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "oracle {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("oracle printed no JSON");
    serde_json::from_str(line).unwrap()
}

fn objects_of(v: &serde_json::Value) -> HashMap<String, Vec<u8>> {
    v["objects"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, b)| (k.clone(), B64.decode(b.as_str().unwrap()).unwrap()))
        .collect()
}

fn pulled(v: &serde_json::Value) -> (proto::Metadata, proto::ObjectTree, HashMap<String, Vec<u8>>) {
    let resp: proto::PullMessagesResponse = proto::decode(
        "pull",
        &B64.decode(v["pull_response"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(resp.messages_list.len(), 1);
    let m = resp.messages_list[0].clone();
    assert!(
        m.content.is_some() && m.content.as_ref().unwrap().items.is_empty(),
        "a pulled message carries an empty RecordDict"
    );
    (
        m.metadata.unwrap(),
        resp.message_object_trees[0].clone(),
        objects_of(v),
    )
}

#[test]
fn flwr_message_decodes_here() {
    let Some(py) = python() else { return };
    for chunk in ["64", "5242880"] {
        let v = oracle(&py, &["emit", chunk], None);
        let (md, tree, objs) = pulled(&v);
        assert_eq!(md.message_id, v["message_id"].as_str().unwrap());
        assert_eq!(tree.object_id, md.message_id);
        let order = objects::post_order(&tree);
        assert!(
            order.iter().all(|id| objs.contains_key(id)),
            "every tree object was emitted"
        );
        assert_eq!(order.last(), Some(&md.message_id));
        if chunk == "64" {
            assert!(
                order.len() > 20,
                "64-byte chunks split the arrays: {} objects",
                order.len()
            );
        }
        let m = inflate_message(&md.message_id, &objs, &MessageLimits::generous()).unwrap();
        assert_eq!(
            (
                m.metadata.run_id,
                m.metadata.src_node_id,
                m.metadata.dst_node_id
            ),
            (77, 1, 1234)
        );
        assert_eq!(
            (
                m.metadata.message_type.as_str(),
                m.metadata.group_id.as_str()
            ),
            ("train", "3")
        );
        assert_eq!(m.metadata.src_task_id, Some(9));
        assert_eq!(m.metadata.created_at, v["created_at"].as_f64().unwrap());
        let c = m.content.unwrap();
        let (_, arrays) = c.array_records()[0];
        let names: Vec<&str> = arrays.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["0.weight", "0.bias", "1.bias", "scalar", "wide"]);
        let w = &arrays.0[0].1;
        assert_eq!(w.shape, [3, 4]);
        assert_eq!(w.data, (0..12).map(|i| i as f32 / 7.0).collect::<Vec<_>>());
        assert_eq!(arrays.0[3].1.shape, Vec::<usize>::new());
        assert_eq!(arrays.0[3].1.data, [2.5]);
        assert_eq!(
            (arrays.0[4].1.dtype, arrays.0[4].1.data[9]),
            ("float64", 9.0)
        );
        let (_, cfg) = c.config_records()[0];
        assert_eq!(cfg.get("server-round"), Some(&ConfigValue::Int(3)));
        assert_eq!(cfg.get("big"), Some(&ConfigValue::Uint((1u64 << 63) + 5)));
        assert_eq!(cfg.get("neg"), Some(&ConfigValue::Int(-4)));
        assert_eq!(cfg.get("name"), Some(&ConfigValue::Str("é-ünïcode".into())));
        assert_eq!(cfg.get("flag"), Some(&ConfigValue::Bool(true)));
        assert_eq!(
            cfg.get("floats"),
            Some(&ConfigValue::FloatList(vec![1.0, 2.5]))
        );
        assert_eq!(cfg.get("raw"), Some(&ConfigValue::Bytes(vec![0, 1, 255])));
        assert_eq!(
            cfg.get("strs"),
            Some(&ConfigValue::StrList(vec!["a".into(), "b".into()]))
        );
        let (_, met) = c.metric_records()[0];
        assert_eq!(met.0[0], ("num-examples".into(), MetricValue::Int(7)));
        assert_eq!(
            met.0[2],
            ("ints".into(), MetricValue::IntList(vec![1, 2, 3]))
        );
    }
}

#[test]
fn redeflating_flwr_content_gives_flwr_object_ids() {
    let Some(py) = python() else { return };
    let v = oracle(&py, &["emit", "5242880", "f32"], None);
    let (md, _, objs) = pulled(&v);
    let m = inflate_message(&md.message_id, &objs, &MessageLimits::generous()).unwrap();
    let d = deflate_message(&md, m.content.as_ref(), None);
    assert_eq!(
        d.message_id, md.message_id,
        "same message object ID as flwr"
    );
    let mut ours: Vec<&String> = d.objects.iter().map(|(id, _)| id).collect();
    let mut theirs: Vec<&String> = objs.keys().collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "same set of object IDs");
    for (id, c) in &d.objects {
        assert_eq!(c, &objs[id], "object {id} byte for byte");
    }
}

#[test]
fn reply_built_here_inflates_in_flwr() {
    let Some(py) = python() else { return };
    let v = oracle(&py, &["emit", "5242880"], None);
    let (md, _, _) = pulled(&v);
    let now = md.created_at + 2.0;
    let rmd = reply_metadata(&md, now);
    let w = NdArray::new(vec![2, 3], vec![0.5, -1.0, 2.0, 1e-8, -0.0, 3.25]).unwrap();
    let z = NdArray::new(vec![3], vec![0.0; 3]).unwrap();
    let content = RecordDict(vec![
        (
            "arrays".into(),
            Record::Arrays(ArrayRecord(vec![
                ("w".into(), w),
                ("b".into(), z.clone()),
                ("b2".into(), z),
            ])),
        ),
        (
            "metrics".into(),
            Record::Metrics(MetricRecord(vec![
                ("num-examples".into(), MetricValue::Int(480)),
                ("train_loss".into(), MetricValue::Float(0.25)),
            ])),
        ),
        (
            "config".into(),
            Record::Config(ConfigRecord(vec![
                ("note".into(), ConfigValue::Str("naïve \"quoted\"".into())),
                ("blob".into(), ConfigValue::Bytes(vec![9, 8])),
                ("u".into(), ConfigValue::Uint(1 << 63)),
            ])),
        ),
    ]);
    let d = deflate_message(&rmd, Some(&content), None);
    let mut sent = rmd.clone();
    sent.message_id = d.message_id.clone();
    let push = proto::PushMessagesRequest {
        node: Some(Node { node_id: 1234 }),
        messages_list: vec![proto::Message {
            metadata: Some(sent),
            content: Some(proto::RecordDict::default()),
            error: None,
        }],
        message_object_trees: vec![d.tree.clone()],
        clientapp_runtime_list: vec![1.5],
    };
    let objects: serde_json::Map<String, serde_json::Value> = d
        .objects
        .iter()
        .map(|(k, c)| (k.clone(), B64.encode(c).into()))
        .collect();
    let req = serde_json::json!({"message_id": d.message_id, "objects": objects, "push_request": B64.encode(proto::encode(&push))});
    let r = oracle(&py, &["check"], Some(&req.to_string()));
    assert_eq!(
        r["message_id_matches_object"], true,
        "flwr computes the same message ID"
    );
    let m = &r["metadata"];
    assert_eq!(m["run_id"], 77);
    assert_eq!(m["src_node_id"], 1234);
    assert_eq!(m["dst_node_id"], 1);
    assert_eq!(m["reply_to_message_id"], md.message_id.as_str());
    assert_eq!(m["message_type"], "train");
    assert_eq!(m["group_id"], "3");
    assert!(
        (m["ttl"].as_f64().unwrap() - (md.ttl - 2.0)).abs() < 1e-6,
        "reply TTL = what is left of the instruction's"
    );
    assert_eq!(r["arrays"]["w"]["dtype"], "float32");
    assert_eq!(r["arrays"]["w"]["shape"], serde_json::json!([2, 3]));
    let vals: Vec<f32> = r["arrays"]["w"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(vals, [0.5, -1.0, 2.0, 1e-8, -0.0, 3.25]);
    assert_eq!(
        r["arrays"]["b2"]["values"],
        serde_json::json!([0.0, 0.0, 0.0])
    );
    assert_eq!(r["metrics"]["num-examples"], 480);
    assert_eq!(r["config"]["note"], "naïve \"quoted\"");
    assert_eq!(r["config"]["blob"], serde_json::json!({"bytes": [9, 8]}));
    assert_eq!(r["config"]["u"], serde_json::json!(1u64 << 63));
    let p = &r["push"];
    assert_eq!(
        (
            p["node_id"].as_u64(),
            p["has_content"].as_bool(),
            p["content_items"].as_u64()
        ),
        (Some(1234), Some(true), Some(0))
    );
    assert_eq!(p["message_id"], d.message_id.as_str());
    let tree_ids: Vec<String> = p["tree_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    assert_eq!(tree_ids.last(), Some(&d.message_id));
    assert_eq!(p["runtime"], serde_json::json!([1.5]));
}

/// Shapes, reference values and updated values of some arrays.
type Update = (Vec<Vec<usize>>, Vec<Vec<f32>>, Vec<Vec<f32>>);

/// A seeded update of three arrays (4,000 values) around reference parameters.
fn update(scale: f32) -> Update {
    let shapes = vec![vec![50, 60], vec![60], vec![94, 10]];
    let mut old = Vec::new();
    let mut new = Vec::new();
    for (k, s) in shapes.iter().enumerate() {
        let n: usize = s.iter().product();
        let o: Vec<f32> = (0..n)
            .map(|i| pixelgrad_core::rng::normal(11 + k as u64, i as u64))
            .collect();
        let d: Vec<f32> = (0..n)
            .map(|i| scale * pixelgrad_core::rng::normal(99 + k as u64, i as u64))
            .collect();
        new.push(o.iter().zip(&d).map(|(a, b)| a + b).collect());
        old.push(o);
    }
    (shapes, old, new)
}

#[test]
fn device_dp_matches_flwr_mods() {
    let Some(py) = python() else { return };
    let dev = Device::new(CpuBackend::new());
    // Update norms ~ 0.02 * sqrt(4000) = 1.26 (clip active at 0.5) and ~ 0.0001 * 63 (inactive).
    for (scale, clip) in [(0.02f32, 0.5f64), (0.0001, 0.5)] {
        let (shapes, old, new) = update(scale);
        let (eps, delta, sens) = (2.0, 1e-5, clip);
        let req = serde_json::json!({"old": old, "new": new, "shapes": shapes, "clip": clip, "sensitivity": sens, "epsilon": eps, "delta": delta});
        let r = oracle(&py, &["dp"], Some(&req.to_string()));
        let up = |v: &[Vec<f32>]| -> Vec<Tensor> {
            v.iter()
                .zip(&shapes)
                .map(|(d, s)| Tensor::from_vec(&dev, d, s.clone()).unwrap())
                .collect()
        };
        let (o, n) = (up(&old), up(&new));
        let (clipped, norm) = dp::clip_update(&n, &o, clip as f32).unwrap();
        let norm = norm.to_vec().unwrap()[0] as f64;
        let flwr_norm = r["norm"].as_f64().unwrap();
        assert!(
            (norm - flwr_norm).abs() <= 1e-5 * flwr_norm.max(1e-3),
            "norm {norm} vs flwr {flwr_norm}"
        );
        let flwr_clipped: Vec<Vec<f64>> = serde_json::from_value(r["clipped"].clone()).unwrap();
        for (t, f) in clipped.iter().zip(&flwr_clipped) {
            let ours = t.to_vec().unwrap();
            let worst = ours
                .iter()
                .zip(f)
                .map(|(a, b)| (*a as f64 - b).abs())
                .fold(0.0, f64::max);
            assert!(
                worst < 2e-6,
                "clipped parameters differ from fixedclipping_mod by {worst}"
            );
        }
        // Local DP: same sigma as LocalDpMod; both noises have that standard deviation.
        let ldp = LocalDp::new(clip, sens, eps, delta).unwrap();
        let sigma = r["std"].as_f64().unwrap();
        assert!(
            (ldp.std_dev() - sigma).abs() < 1e-12 * sigma,
            "sigma {} vs flwr {sigma}",
            ldp.std_dev()
        );
        let mut noise = pixelgrad_flower::noise::Noise::from_key([9; 32]);
        let noised: Vec<Vec<f32>> = clipped
            .iter()
            .map(|t| {
                let mut v = t.to_vec().unwrap();
                noise.add(&mut v, sigma);
                v
            })
            .collect();
        let flwr_noised: Vec<Vec<f64>> = serde_json::from_value(r["noised"].clone()).unwrap();
        let std_of = |d: Vec<f64>| (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt();
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for ((v, c), f) in noised.iter().zip(&flwr_clipped).zip(&flwr_noised) {
            ours.extend(v.iter().zip(c).map(|(a, b)| *a as f64 - b));
            theirs.extend(f.iter().zip(c).map(|(a, b)| a - b));
        }
        let (so, st) = (std_of(ours), std_of(theirs));
        assert!(
            (so / sigma - 1.0).abs() < 0.05,
            "pixelgrad noise std {so} vs sigma {sigma}"
        );
        assert!(
            (st / sigma - 1.0).abs() < 0.05,
            "LocalDpMod noise std {st} vs sigma {sigma} (after the same clipping)"
        );
    }
}
