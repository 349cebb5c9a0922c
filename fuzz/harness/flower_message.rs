// Flower messages as a node receives them (`pixelgrad_flower`): the `PullMessagesResponse`, its
// object tree and the objects, checked and inflated within the limits a small local model sets
// (or generous ones), then matched to the model's parameters and the round's config read.
//
// The first byte picks the form of the rest, a list of records `[u32 LE length][bytes]`:
// - bit 0 clear, **wire**: the answer bodies exactly as a SuperLink sends them — a
//   `PullMessagesResponse`, then one `PullObjectResponse` per object of its tree, in the order
//   the node pulls them (seeds recorded from a real flwr 1.42 SuperLink,
//   `scripts/flower-record-fuzz-seeds.sh`);
// - bit 0 set, **structured**: one object per record as `kind \0 children \0 body`, children
//   the comma-separated indices of earlier records, `#N#` in a body standing for record N's ID;
//   the IDs are computed here, so mutations reach past the SHA-256 check into the heads, the
//   reference JSON, the array metadata, the npy bytes and the protobuf bodies. The last
//   record is the message.
// Bit 1 picks generous limits instead of the small model's.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/flower_message.rs` and the stable test that
// runs the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any
// panic is a bug.
use std::collections::HashMap;

use pixelgrad_flower::limits::MessageLimits;
use pixelgrad_flower::node::{self, NodeOptions};
use pixelgrad_flower::objects::{self, InflatedMessage};
use pixelgrad_flower::proto::{self, ObjectTree};

/// The small local model: 4 → 8 → 3 (weights and biases).
pub const SHAPES: [&[usize]; 4] = [&[4, 8], &[8], &[8, 3], &[3]];

/// The records of `data` (at most 4096).
pub fn records(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while data.len() >= 4 && out.len() < 4096 {
        let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
        let n = n.min(data.len() - 4);
        out.push(&data[4..4 + n]);
        data = &data[4 + n..];
    }
    out
}

fn wire(recs: &[&[u8]], limits: &MessageLimits) -> Option<InflatedMessage> {
    let first = recs.first()?;
    let r: proto::PullMessagesResponse = proto::decode("PullMessagesResponse", first).ok()?;
    let md = r.messages_list.first()?.metadata.clone()?;
    let tree = r.message_object_trees.first()?;
    let ids = objects::checked_tree_ids(tree, limits).ok()?;
    let mut objs = HashMap::new();
    for (id, body) in ids.iter().zip(&recs[1..]) {
        let o: proto::PullObjectResponse = proto::decode("PullObjectResponse", body).ok()?;
        objs.insert(id.clone(), o.object_content);
    }
    objects::inflate_message(&md.message_id, &objs, limits).ok()
}

/// `body` with every `#N#` (N < `ids.len()`) replaced by `ids[N]`.
fn substitute(body: &[u8], ids: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'#' {
            let digits = body[i + 1..].iter().take(5).take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 && body.get(i + 1 + digits) == Some(&b'#') {
                let n: usize = std::str::from_utf8(&body[i + 1..i + 1 + digits]).unwrap().parse().unwrap();
                if let Some(id) = ids.get(n) {
                    out.extend_from_slice(id.as_bytes());
                    i += digits + 2;
                    continue;
                }
            }
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

fn structured(recs: &[&[u8]], limits: &MessageLimits) -> Option<InflatedMessage> {
    let mut ids: Vec<String> = Vec::new();
    let mut trees: Vec<ObjectTree> = Vec::new();
    let mut objs = HashMap::new();
    for r in recs {
        let mut parts = r.splitn(3, |&b| b == 0);
        let kind = parts.next()?;
        let children = std::str::from_utf8(parts.next()?).ok()?;
        let body = substitute(parts.next()?, &ids);
        let idx: Vec<usize> = if children.is_empty() {
            Vec::new()
        } else {
            children.split(',').map(|c| c.parse().ok().filter(|&c: &usize| c < ids.len())).collect::<Option<_>>()?
        };
        let child_ids: Vec<String> = idx.iter().map(|&c| ids[c].clone()).collect();
        let mut content = Vec::new();
        content.extend_from_slice(kind);
        content.extend_from_slice(format!(" {} {}", child_ids.join(","), body.len()).as_bytes());
        content.push(0);
        content.extend_from_slice(&body);
        let id = objects::object_id(&content);
        trees.push(ObjectTree { object_id: id.clone(), children: idx.iter().map(|&c| trees[c].clone()).collect() });
        objs.insert(id.clone(), content);
        ids.push(id);
    }
    let root = trees.last()?;
    objects::checked_tree_ids(root, limits).ok()?;
    objects::inflate_message(&root.object_id, &objs, limits).ok()
}

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let shapes: Vec<Vec<usize>> = SHAPES.iter().map(|s| s.to_vec()).collect();
    let limits = if mode & 2 == 0 { MessageLimits::for_model(&shapes, 0.05).unwrap() } else { MessageLimits::generous() };
    let recs = records(rest);
    let msg = if mode & 1 == 0 { wire(&recs, &limits) } else { structured(&recs, &limits) };
    let Some(msg) = msg else { return };
    let Some(content) = msg.content else { return };
    // what the node does next with a train or evaluate message
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    let params: Vec<pixelgrad_core::Tensor> =
        shapes.iter().map(|s| pixelgrad_core::Tensor::zeros(&dev, s.clone()).expect("small zeros")).collect();
    for (_, arrays) in content.array_records() {
        let fits = node::check_fit(arrays, &params).is_ok();
        if fits {
            for ((_, a), s) in arrays.0.iter().zip(&shapes) {
                assert_eq!(&a.shape, s);
                assert_eq!(a.data.len(), s.iter().product::<usize>());
            }
        }
    }
    for (_, cfg) in content.config_records() {
        if let Ok(rc) = node::round_config(cfg, &NodeOptions::default(), 1) {
            assert!(rc.epochs >= 1 && rc.epochs <= NodeOptions::default().max_epochs);
            assert!(rc.batch_size >= 1 && rc.lr.is_finite());
        }
    }
}
