//! `pg.flower`: a model joins a Flower federation from the page (or a worker) through `fetch`.
//!
//! The node runs as one future on the page's event loop; the model trained is a copy of the
//! user's model (built from its config on the same runtime), so the user's model changes only
//! when a round's global parameters are handed back through the events (`weights`, safetensors
//! bytes the JS side loads). Errors reject the promise with a `PixelgradError` whose `kind` is
//! the Flower error's (`unreachable`, `timeout`, `tls`, `notRegistered`, `http`, `protocol`,
//! `limit`, `mismatch`, `invalid`, `cancelled`, or the engine error's own kind); nothing panics.
//!
//! The node's key is a fresh one per join, or the page's persistent WebCrypto key
//! (`pg.flower.nodeKey()`, a non-extractable P-256 key kept in IndexedDB): its public key and
//! a `sign` function come in, the secret never does.

use std::cell::Cell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect, Uint32Array, Uint8Array};
use pixelgrad::flower::auth::NodeKey;
use pixelgrad::flower::dp::LocalDp;
use pixelgrad::flower::fleet::FleetClient;
use pixelgrad::flower::node::{self, Event, NodeOptions};
use pixelgrad::flower::partition;
use pixelgrad::flower::privacy::{DistributedDp, ShareMetrics};
use pixelgrad::flower::transport::{FetchTransport, TransportOptions};
use pixelgrad::flower::FlowerError;
use pixelgrad::nn::Module;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{js_err, Runtime};
use crate::flower::{HostData, NetLearner};
use crate::net::Net;

fn set(o: &Object, k: &str, v: impl Into<JsValue>) {
    let _ = Reflect::set(o, &JsValue::from_str(k), &v.into());
}

fn num(o: &serde_json::Value, k: &str) -> Option<f64> {
    o.get(k).and_then(|v| v.as_f64())
}

/// A whole number option in `1..=max`, or `default` when absent.
fn count(o: &serde_json::Value, k: &str, default: u64, max: u64) -> Result<u64, JsValue> {
    match o.get(k) {
        None | Some(serde_json::Value::Null) => Ok(default),
        Some(v) => match v.as_f64() {
            Some(x) if x.fract() == 0.0 && x >= 1.0 && x <= max as f64 => Ok(x as u64),
            _ => Err(js_err(format!("flower.join: {k} must be a whole number in 1..={max}, got {v}"))),
        },
    }
}

/// A Flower error as a `PixelgradError` with the error's kind (an engine error keeps its own).
fn flower_err(e: FlowerError) -> JsValue {
    let kind = match &e {
        FlowerError::Engine { source, .. } => {
            let inner = js_err(source.clone());
            Reflect::get(&inner, &"kind".into()).ok().and_then(|k| k.as_string()).unwrap_or_else(|| "engine".into())
        }
        other => other.kind().to_string(),
    };
    let v = js_err(format!("flower.join: {e}"));
    let _ = Reflect::set(&v, &"kind".into(), &kind.into());
    v
}

/// The node key `{ publicKey: Uint8Array (SPKI), sign: (Uint8Array) => Promise<ArrayBuffer> }`
/// from `pg.flower.nodeKey()`, or a fresh key when `key` is null or undefined.
fn node_key(key: &JsValue) -> Result<NodeKey, JsValue> {
    if key.is_null() || key.is_undefined() {
        return NodeKey::generate().map_err(js_err);
    }
    let spki: Uint8Array = Reflect::get(key, &"publicKey".into())?
        .dyn_into()
        .map_err(|_| js_err("flower.join: nodeKey.publicKey must be a Uint8Array (use pg.flower.nodeKey())"))?;
    let sign: Function = Reflect::get(key, &"sign".into())?
        .dyn_into()
        .map_err(|_| js_err("flower.join: nodeKey.sign must be a function (use pg.flower.nodeKey())"))?;
    NodeKey::from_js_signer(&spki.to_vec(), sign).map_err(|e| js_err(format!("flower.join: {e}")))
}

/// The event as a plain JS object (`{ type: 'trained', round, ... }`).
fn event_obj(e: &Event, weights: Option<Vec<u8>>) -> Object {
    let o = Object::new();
    match e {
        Event::Connected { node_id } => {
            set(&o, "type", "connected");
            set(&o, "nodeId", node_id.to_string());
        }
        Event::Received { round, kind, bytes, stage } => {
            set(&o, "type", "received");
            set(&o, "round", *round as f64);
            set(&o, "kind", kind.as_str());
            set(&o, "bytes", *bytes as f64);
            set(&o, "stage", stage.as_deref().map(JsValue::from).unwrap_or(JsValue::NULL));
        }
        Event::Trained { round, stats, update_norm, clipped_to, noise_std, seconds, secagg, epsilon, epsilon_own, delta } => {
            set(&o, "type", "trained");
            set(&o, "round", *round as f64);
            set(&o, "examples", stats.examples as f64);
            set(&o, "loss", stats.loss);
            set(&o, "accuracy", stats.accuracy);
            set(&o, "updateNorm", *update_norm);
            set(&o, "clippedTo", clipped_to.map(JsValue::from).unwrap_or(JsValue::NULL));
            set(&o, "noiseStd", noise_std.map(JsValue::from).unwrap_or(JsValue::NULL));
            set(&o, "seconds", *seconds);
            set(&o, "secagg", *secagg);
            set(&o, "epsilon", epsilon.map(JsValue::from).unwrap_or(JsValue::NULL));
            set(&o, "epsilonOwnNoise", epsilon_own.map(JsValue::from).unwrap_or(JsValue::NULL));
            set(&o, "delta", delta.map(JsValue::from).unwrap_or(JsValue::NULL));
        }
        Event::SecAggStage { round, stage, seconds } => {
            set(&o, "type", "secaggStage");
            set(&o, "round", *round as f64);
            set(&o, "stage", stage.as_str());
            set(&o, "seconds", *seconds);
        }
        Event::Evaluated { round, stats, shared, .. } => {
            set(&o, "type", "evaluated");
            set(&o, "shared", *shared);
            set(&o, "round", *round as f64);
            set(&o, "examples", stats.examples as f64);
            set(&o, "loss", stats.loss);
            set(&o, "accuracy", stats.accuracy);
            set(&o, "weights", weights.map(|w| JsValue::from(Uint8Array::from(&w[..]))).unwrap_or(JsValue::NULL));
        }
        Event::Replied { round, kind, bytes, stage } => {
            set(&o, "type", "replied");
            set(&o, "round", *round as f64);
            set(&o, "kind", kind.as_str());
            set(&o, "bytes", *bytes as f64);
            set(&o, "stage", stage.as_deref().map(JsValue::from).unwrap_or(JsValue::NULL));
        }
        Event::Failed { round, reason } => {
            set(&o, "type", "failed");
            set(&o, "round", *round as f64);
            set(&o, "reason", reason.as_str());
        }
        Event::Waiting => set(&o, "type", "waiting"),
        Event::Finished { rounds } => {
            set(&o, "type", "finished");
            set(&o, "rounds", *rounds as f64);
        }
    }
    o
}

/// A running node: `promise` settles when it ends; `stop()` ends it after the current step.
#[wasm_bindgen]
pub struct FlowerNode {
    promise: Promise,
    stop: Rc<Cell<bool>>,
}

#[wasm_bindgen]
impl FlowerNode {
    #[wasm_bindgen(getter)]
    pub fn promise(&self) -> Promise {
        self.promise.clone()
    }
    pub fn stop(&self) {
        self.stop.set(true);
    }
}

/// Joins the federation at `options.server` with a copy of the model `config` (JSON of
/// `model._config()`), compiled with `optimizer`/`loss`, on `rt`'s device, training on `train*`
/// and evaluating on `test*` (`sample` is the per-sample shape). `options` (JSON): `server`,
/// `epochs`, `batchSize`, `lr`, `momentum`, `seed`, `readEvery`, `pollMax`, `heartbeatPeriod`,
/// `syncWeights`, `localDp: { epsilon, delta, clippingNorm, sensitivity }`, `timeout` (seconds
/// per request), `maxEpochs`, `maxRounds`, `secagg` (updates only through SecAgg+),
/// `distributedDp: { noiseMultiplier, clippingNorm, delta }` (with `secagg`), `maxEpsilon`
/// (the node's own budget; rounds past it are refused), `shareMetrics` (`'minimal'` default,
/// or `'all'`). `on_event` gets one object per event; `key` is the
/// node key (see [`node_key`]).
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = flowerJoin)]
pub fn flower_join(
    rt: &Runtime,
    config: &str,
    optimizer: &str,
    loss: &str,
    train_x: Vec<f32>,
    train_y: Vec<f32>,
    test_x: Vec<f32>,
    test_y: Vec<f32>,
    sample: Vec<u32>,
    options: &str,
    on_event: Function,
    key: JsValue,
) -> Result<FlowerNode, JsValue> {
    let cfg: serde_json::Value = serde_json::from_str(config).map_err(|e| js_err(format!("flower.join: bad model config: {e}")))?;
    let o: serde_json::Value = serde_json::from_str(options).map_err(|e| js_err(format!("flower.join: bad options: {e}")))?;
    let server =
        o.get("server").and_then(|v| v.as_str()).ok_or_else(|| js_err("flower.join: `server` (the page server's origin) is required"))?;
    let sample: Vec<usize> = sample.iter().map(|&d| d as usize).collect();
    let train = HostData::new(train_x, train_y, sample.clone()).map_err(|e| js_err(format!("flower.join: train data: {e}")))?;
    let test = HostData::new(test_x, test_y, sample).map_err(|e| js_err(format!("flower.join: test data: {e}")))?;
    let local_dp = match o.get("localDp") {
        None | Some(serde_json::Value::Null) => None,
        Some(d) => {
            let clip = num(d, "clippingNorm").ok_or_else(|| js_err("flower.join: localDp.clippingNorm is required"))?;
            Some(
                LocalDp::new(
                    clip,
                    num(d, "sensitivity").unwrap_or(clip),
                    num(d, "epsilon").unwrap_or(f64::NAN),
                    num(d, "delta").unwrap_or(f64::NAN),
                )
                .map_err(js_err)?,
            )
        }
    };
    let secagg = match o.get("secagg") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(v) => return Err(js_err(format!("flower.join: secagg must be true or false, got {v}"))),
    };
    let distributed_dp = match o.get("distributedDp") {
        None | Some(serde_json::Value::Null) => None,
        Some(d) => Some(
            DistributedDp::new(
                num(d, "noiseMultiplier").unwrap_or(f64::NAN),
                num(d, "clippingNorm").unwrap_or(f64::NAN),
                num(d, "delta").unwrap_or(f64::NAN),
            )
            .map_err(|e| js_err(format!("flower.join: {e}")))?,
        ),
    };
    let max_epsilon = match o.get("maxEpsilon") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(m) if m > 0.0 && m.is_finite() => Some(m),
            _ => return Err(js_err(format!("flower.join: maxEpsilon must be a positive number, got {v}"))),
        },
    };
    let share_metrics = match o.get("shareMetrics") {
        None | Some(serde_json::Value::Null) => ShareMetrics::default(),
        Some(v) => ShareMetrics::parse(v.as_str().unwrap_or("")).map_err(|e| js_err(format!("flower.join: {e}")))?,
    };
    let net = Net::new(rt.device(), cfg).map_err(js_err)?;
    let mut names = Vec::new();
    net.built.seq.visit_params(&mut |n, _| names.push(n.to_string()));
    let mut buffers = 0;
    net.built.seq.visit_buffers(&mut |_, _| buffers += 1);
    let sync = o.get("syncWeights").and_then(|v| v.as_bool()).unwrap_or(true) && buffers == 0;
    let mut learner = NetLearner {
        net,
        optimizer: optimizer.to_string(),
        momentum: num(&o, "momentum").unwrap_or(0.0) as f32,
        loss: loss.to_string(),
        train,
        test,
        seed: num(&o, "seed").unwrap_or(0.0) as u64,
        read_every: num(&o, "readEvery").unwrap_or(10.0).max(1.0) as usize,
        slice_s: pixelgrad::flower::pace::DEFAULT_SLICE_S,
    };
    let d = NodeOptions::default();
    let timeout_s = match o.get("timeout") {
        None | Some(serde_json::Value::Null) => pixelgrad::flower::transport::DEFAULT_TIMEOUT_S,
        Some(v) => match v.as_f64() {
            Some(t) if t > 0.0 && t.is_finite() => t,
            _ => return Err(js_err(format!("flower.join: timeout must be a positive number of seconds, got {v}"))),
        },
    };
    let opts = NodeOptions {
        max_epochs: count(&o, "maxEpochs", d.max_epochs as u64, 1 << 20)? as usize,
        max_rounds: count(&o, "maxRounds", d.max_rounds, 1 << 40)?,
        epochs: num(&o, "epochs").unwrap_or(1.0).max(1.0) as usize,
        batch_size: num(&o, "batchSize").unwrap_or(32.0).max(1.0) as usize,
        lr: num(&o, "lr").unwrap_or(1e-3) as f32,
        local_dp,
        secagg,
        distributed_dp,
        max_epsilon,
        share_metrics,
        poll_max: num(&o, "pollMax").unwrap_or(d.poll_max),
        heartbeat_period: num(&o, "heartbeatPeriod").unwrap_or(d.heartbeat_period),
        ..d
    };
    opts.check().map_err(|e| js_err(format!("flower.join: {e}")))?;
    // training gives heartbeats a turn well within their period, however slow the device
    learner.slice_s = pixelgrad::flower::pace::slice_for(opts.heartbeat_period);
    let key = node_key(&key)?;
    let transport = FetchTransport::with_options(server, TransportOptions { timeout_s, ..Default::default() }).map_err(js_err)?;
    let stop = Rc::new(Cell::new(false));
    let stop2 = stop.clone();
    let promise = future_to_promise(async move {
        let client = FleetClient::new(transport, key);
        let mut on = |e: &Event| {
            let weights = match e {
                Event::Evaluated { arrays, .. } if sync => {
                    let host: Vec<_> =
                        names.iter().cloned().zip(&arrays.0).map(|(n, (_, a))| (n, a.shape.clone(), a.data.clone())).collect();
                    crate::save::to_bytes(&host, &HashMap::new()).ok()
                }
                _ => None,
            };
            if !matches!(e, Event::Waiting) {
                let _ = on_event.call1(&JsValue::NULL, &event_obj(e, weights));
            }
            if stop2.get() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let s = node::run(&client, &mut learner, &opts, &mut on).await.map_err(flower_err)?;
        let out = Object::new();
        set(&out, "nodeId", s.node_id.to_string());
        set(&out, "runId", s.run_id.to_string());
        set(&out, "rounds", s.rounds_trained as f64);
        set(&out, "evaluations", s.evaluations as f64);
        set(&out, "bytesUp", s.traffic.up as f64);
        set(&out, "bytesDown", s.traffic.down as f64);
        Ok(out.into())
    });
    Ok(FlowerNode { promise, stop })
}

/// `{ openssh, fingerprint }` of a P-256 public key given as SPKI bytes (WebCrypto's
/// `exportKey('spki')`): the line `flwr supernode register` takes, and its SHA256 fingerprint.
#[wasm_bindgen(js_name = flowerPublicKeyInfo)]
pub fn flower_public_key_info(spki: Vec<u8>) -> Result<Object, JsValue> {
    let (openssh, fingerprint) = pixelgrad::flower::auth::describe_public_key(&spki).map_err(|e| js_err(format!("flower.nodeKey: {e}")))?;
    let o = Object::new();
    set(&o, "openssh", openssh);
    set(&o, "fingerprint", fingerprint);
    Ok(o)
}

/// Indices of partition `index` of `count`: Dirichlet(`alpha`) label shards when `alpha > 0`,
/// else an IID split (the same partitions as `pixelgrad federated --partition index/count`).
#[wasm_bindgen(js_name = flowerPartition)]
pub fn flower_partition(labels: Vec<u32>, index: u32, count: u32, alpha: f64, seed: u32) -> Result<Uint32Array, JsValue> {
    let (i, n) = (index as usize, count as usize);
    if n == 0 || i >= n {
        return Err(js_err(format!("flower.partition: index {index} is not in 0..{count}")));
    }
    let parts =
        if alpha > 0.0 { partition::dirichlet(&labels, n, alpha, seed as u64) } else { partition::iid(labels.len(), n, seed as u64) }
            .map_err(|e| js_err(format!("flower.partition: {e}")))?;
    let v: Vec<u32> = parts[i].iter().map(|&x| x as u32).collect();
    Ok(Uint32Array::from(&v[..]))
}
