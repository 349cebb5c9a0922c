//! Records what a real SuperLink sends a node, as seeds of the `flower_message` fuzz target
//! (wire form: a `PullMessagesResponse` and the `PullObjectResponse`s of its tree, each as
//! `[u32 LE length][body]` after a 0 mode byte). Run by `scripts/flower-record-fuzz-seeds.sh`:
//!
//! ```text
//! record_fleet --write-init FILE          # the 4 -> 8 -> 3 model's initial parameters
//! record_fleet --record URL OUT_DIR       # join as a node until the run finishes
//! ```

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_flower::auth::NodeKey;
use pixelgrad_flower::fleet::FleetClient;
use pixelgrad_flower::learner::{ModuleLearner, Shard};
use pixelgrad_flower::node::{self, NodeOptions};
use pixelgrad_flower::transport::{Heartbeats, HttpResponse, NativeTransport, Transport};
use pixelgrad_flower::Result;
use pixelgrad_nn::layers::{Activation, Linear};
use pixelgrad_nn::{io, Init, Loss, Module, OptimizerKind, Sequential};

fn learner() -> ModuleLearner<Sequential> {
    let dev = Device::new(CpuBackend::new());
    let mut init = Init::new(5);
    let model = Sequential::new()
        .push(Linear::new(&dev, 4, 8, &mut init).expect("layer"))
        .push(Activation::Relu)
        .push(Linear::new(&dev, 8, 3, &mut init).expect("layer"));
    let x: Vec<f32> = (0..80).map(|i| (i % 7) as f32 / 7.0).collect();
    let y: Vec<u32> = (0..20).map(|i| i % 3).collect();
    let shard = Shard::new(x, y, vec![4]).expect("shard");
    ModuleLearner {
        dev,
        model,
        loss: Loss::CrossEntropy,
        optimizer: OptimizerKind::parse("adam").expect("adam"),
        train: shard.clone(),
        test: shard,
        seed: 1,
    }
}

/// A transport that keeps the bodies of the answers a node receives with messages.
struct Recording {
    inner: NativeTransport,
    out: PathBuf,
    current: RefCell<Option<(String, Vec<Vec<u8>>)>>,
    written: RefCell<HashMap<String, usize>>,
}

impl Recording {
    fn flush(&self) {
        if let Some((kind, recs)) = self.current.borrow_mut().take() {
            let mut w = self.written.borrow_mut();
            let n = w.entry(kind.clone()).or_insert(0);
            *n += 1;
            let mut bytes = vec![0u8];
            for r in &recs {
                bytes.extend((r.len() as u32).to_le_bytes());
                bytes.extend(r);
            }
            let path = self.out.join(format!("recorded_{kind}_{n}"));
            std::fs::write(&path, bytes).expect("write a seed");
            eprintln!("wrote {} ({} answers)", path.display(), recs.len());
        }
    }
}

impl Transport for Recording {
    fn base_url(&self) -> &str {
        self.inner.base_url()
    }
    async fn post(
        &self,
        path: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<HttpResponse> {
        let r = self.inner.post(path, headers, body).await?;
        if path.ends_with("/pull-messages") {
            let m: pixelgrad_flower::proto::PullMessagesResponse =
                pixelgrad_flower::proto::decode("PullMessagesResponse", &r.body)?;
            if let Some(md) = m.messages_list.first().and_then(|m| m.metadata.as_ref()) {
                self.flush();
                *self.current.borrow_mut() = Some((md.message_type.clone(), vec![r.body.clone()]));
            }
        } else if path.ends_with("/pull-object") {
            let o: pixelgrad_flower::proto::PullObjectResponse =
                pixelgrad_flower::proto::decode("PullObjectResponse", &r.body)?;
            // the answers that delivered an object, one per object of the tree, in order
            if o.object_available {
                if let Some((_, recs)) = self.current.borrow_mut().as_mut() {
                    recs.push(r.body.clone());
                }
            }
        }
        Ok(r)
    }
    async fn sleep(&self, seconds: f64) {
        self.inner.sleep(seconds).await
    }
    fn now(&self) -> f64 {
        self.inner.now()
    }
    fn start_heartbeats(&self, key: &NodeKey, node_id: u64, period: f64) -> Heartbeats {
        self.inner.start_heartbeats(key, node_id, period)
    }
}

fn write_init(path: &Path) {
    let l = learner();
    let mut names = Vec::new();
    l.model.visit_params(&mut |n, _| names.push(n.to_string()));
    let meta = HashMap::from([("pixelgrad.order".to_string(), names.join(","))]);
    io::save(&l.model, path, &meta).expect("write the initial parameters");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--write-init", file] => write_init(Path::new(file)),
        ["--record", url, out] => {
            std::fs::create_dir_all(out).expect("the output folder");
            let t = Recording {
                inner: NativeTransport::new(url, 60.0).expect("transport"),
                out: PathBuf::from(out),
                current: RefCell::new(None),
                written: RefCell::new(HashMap::new()),
            };
            let client = FleetClient::new(t, NodeKey::generate().expect("key"));
            let mut l = learner();
            let opts = NodeOptions {
                check_run_after: 2.0,
                ..Default::default()
            };
            let r = pollster::block_on(node::run(&client, &mut l, &opts, &mut |_| {
                ControlFlow::Continue(())
            }));
            client.transport.flush();
            if let Err(e) = r {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
        _ => {
            eprintln!("usage: record_fleet --write-init FILE | --record URL OUT_DIR");
            std::process::exit(2);
        }
    }
}
