//! SecAgg+ against flwr 1.42 itself, stage by stage: `tests/golden/secagg.json` was made by
//! `scripts/flower_secagg_golden.py` with the pinned flwr (its unmodified `secaggplus_mod`
//! driven by its unmodified `SecAggPlusWorkflow`), every random draw fed from fixed seeds.
//! Replaying the same draws, pixelgrad's client must produce the same bytes: masks (numpy's
//! MT19937), uniforms, quantisation, keys (PEM), shared keys, Fernet tokens, Shamir shares,
//! and every ConfigRecord a node sends in a whole round (protobuf bytes), with and without a
//! node dropping out after key sharing; the server's aggregate is rebuilt here from the
//! nodes' replies and equals flwr's.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use pixelgrad_flower::proto;
use pixelgrad_flower::records::{config_from_proto, config_to_proto, ConfigRecord, ConfigValue};
use pixelgrad_flower::secagg::numpy_rng::NumpyRandomState;
use pixelgrad_flower::secagg::{aggregate, fernet, keys, prg, quantize, shamir};
use pixelgrad_flower::secagg::{stage_of, Entropy, MaskInput, SecAggClient, Stage};
use prost::Message as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn golden() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/secagg.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("golden file")).expect("golden JSON")
}

fn b64(v: &Value) -> Vec<u8> {
    B64.decode(v.as_str().unwrap()).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// SHA-256 counter-mode bytes, as the golden script's `Stream`.
struct Stream {
    label: Vec<u8>,
    counter: u64,
    buf: Vec<u8>,
    taken: usize,
}

impl Stream {
    fn new(label: &str) -> Self {
        Stream {
            label: label.as_bytes().to_vec(),
            counter: 0,
            buf: Vec::new(),
            taken: 0,
        }
    }
    fn take(&mut self, out: &mut [u8]) {
        while self.buf.len() < out.len() {
            let mut h = Sha256::new();
            h.update(&self.label);
            h.update(self.counter.to_le_bytes());
            self.buf.extend_from_slice(&h.finalize());
            self.counter += 1;
        }
        out.copy_from_slice(&self.buf[..out.len()]);
        self.buf.drain(..out.len());
        self.taken += out.len();
    }
}

/// Flower's draws replayed: key scalars, the node's byte stream, numpy's rounding stream.
struct Replay {
    scalars: Vec<Vec<u8>>,
    stream: Stream,
    np: NumpyRandomState,
}

impl Entropy for Replay {
    fn secret_key(&mut self) -> pixelgrad_flower::Result<p384::SecretKey> {
        keys::secret_from_bytes(&self.scalars.remove(0))
    }
    fn fill(&mut self, buf: &mut [u8]) -> pixelgrad_flower::Result<()> {
        self.stream.take(buf);
        Ok(())
    }
    fn uniform(&mut self) -> f64 {
        self.np.random_sample()
    }
}

fn record(b: &[u8]) -> ConfigRecord {
    config_from_proto(proto::ConfigRecord::decode(b).unwrap()).unwrap()
}

#[test]
fn masks_match_numpy() {
    let g = golden();
    let mut checked = 0;
    for c in g["prg"]["cases"].as_array().unwrap() {
        let seed = b64(&c["seed"]);
        let m = c["mod_range"].as_u64().unwrap();
        let sizes: Vec<usize> = c["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                s.as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap() as usize)
                    .product()
            })
            .collect();
        let ours = prg::masks(&seed, m, &sizes).unwrap();
        let want: Vec<Vec<i64>> = c["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                a.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(ours, want, "seed {} mod {m}", c["seed"]);
        checked += 1;
    }
    assert_eq!(checked, 9);
    for key in ["long", "long_mod3"] {
        let l = &g["prg"][key];
        let n = l["n"].as_u64().unwrap() as usize;
        let ours = prg::masks(&b64(&l["seed"]), l["mod_range"].as_u64().unwrap(), &[n]).unwrap();
        let bytes: Vec<u8> = ours[0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            hex(&Sha256::digest(&bytes)),
            l["sha256_i64le"].as_str().unwrap(),
            "{key}"
        );
        if let Some(head) = l["head"].as_array() {
            let h: Vec<i64> = head.iter().map(|v| v.as_i64().unwrap()).collect();
            assert_eq!(&ours[0][..h.len()], &h[..]);
        }
    }
}

#[test]
fn uniforms_match_numpy() {
    let g = golden();
    let u = &g["uniform"];
    let mut r = NumpyRandomState::new(u["seed"].as_u64().unwrap() as u32);
    let v: Vec<f64> = (0..1000).map(|_| r.random_sample()).collect();
    assert_eq!(
        hex(&v[..8]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>()),
        u["head_f64le"].as_str().unwrap()
    );
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(
        hex(&Sha256::digest(&bytes)),
        u["sha256_f64le"].as_str().unwrap()
    );
}

#[test]
fn quantisation_matches_flwr() {
    for c in golden()["quantize"].as_array().unwrap() {
        let clip = c["clipping_range"].as_f64().unwrap();
        let target = c["target_range"].as_u64().unwrap();
        let mut np = NumpyRandomState::new(c["np_seed"].as_u64().unwrap() as u32);
        let mut uni = || np.random_sample();
        for (inp, out) in c["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(c["outputs"].as_array().unwrap())
        {
            let x: Vec<f32> = inp["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            let mut q = Vec::new();
            quantize::quantize_into(&x, clip, target, &mut uni, &mut q).unwrap();
            let want: Vec<i64> = out
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            assert_eq!(q, want, "clip {clip} target {target}");
        }
    }
}

#[test]
fn keys_and_shared_keys_match_cryptography() {
    let g = golden();
    let ks = g["keys"]["keys"].as_array().unwrap();
    let mut sks = Vec::new();
    for k in ks {
        let sk = keys::secret_from_bytes(&unhex(k["scalar"].as_str().unwrap())).unwrap();
        assert_eq!(
            String::from_utf8(keys::secret_to_pem(&sk).unwrap()).unwrap(),
            k["sk_pem"].as_str().unwrap()
        );
        assert_eq!(
            String::from_utf8(keys::public_to_pem(&sk.public_key()).unwrap()).unwrap(),
            k["pk_pem"].as_str().unwrap()
        );
        assert_eq!(
            keys::secret_from_pem(k["sk_pem"].as_str().unwrap().as_bytes()).unwrap(),
            sk
        );
        sks.push(sk);
    }
    for s in g["keys"]["shared"].as_array().unwrap() {
        let i = s["sk"].as_u64().unwrap() as usize;
        let j = s["pk"].as_u64().unwrap() as usize;
        let k = keys::shared_key(&sks[i], &sks[j].public_key());
        assert_eq!(String::from_utf8(k).unwrap(), s["key"].as_str().unwrap());
    }
}

#[test]
fn fernet_tokens_match_cryptography() {
    let g = golden();
    let f = fernet::Fernet::new(g["fernet"]["key"].as_str().unwrap().as_bytes()).unwrap();
    for c in g["fernet"]["cases"].as_array().unwrap() {
        let pt = b64(&c["plaintext"]);
        let iv: [u8; 16] = b64(&c["iv"]).try_into().unwrap();
        let token = f.encrypt(&pt, c["time"].as_u64().unwrap(), &iv);
        assert_eq!(
            String::from_utf8(token.clone()).unwrap(),
            c["token"].as_str().unwrap()
        );
        assert_eq!(
            f.decrypt(c["token"].as_str().unwrap().as_bytes()).unwrap(),
            pt
        );
    }
}

#[test]
fn shamir_shares_match_pycryptodome() {
    for c in golden()["shamir"].as_array().unwrap() {
        let mut st = Stream::new(c["stream"].as_str().unwrap());
        let mut coef = |b: &mut [u8; 16]| {
            st.take(b);
            Ok(())
        };
        let secret = b64(&c["secret"]);
        let t = c["threshold"].as_u64().unwrap() as usize;
        let n = c["num"].as_u64().unwrap() as usize;
        let shares = shamir::create_shares(&secret, t, n, &mut coef).unwrap();
        let want: Vec<Vec<u8>> = c["shares"].as_array().unwrap().iter().map(b64).collect();
        assert_eq!(shares, want);
        assert_eq!(st.taken as u64, c["stream_bytes"].as_u64().unwrap());
        let subset: Vec<Vec<u8>> = c["combine_from"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| want[i.as_u64().unwrap() as usize].clone())
            .collect();
        assert_eq!(shamir::combine_shares(&subset).unwrap(), secret);
    }
}

/// Replays one scenario of `protocol`: every node's replies byte for byte, then the server's
/// aggregate from them.
fn replay_round(r: &Value) {
    let fernet_time = 1_700_000_000;
    let mut masked = Vec::new();
    let mut shares: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    let mut neighbours: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut pk1: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut setup = None;
    let (mut active, mut dead) = (Vec::new(), Vec::new());
    for n in r["nodes"].as_array().unwrap() {
        let nid: u64 = n["nid"].as_str().unwrap().parse().unwrap();
        let mut e = Replay {
            scalars: n["scalars"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| unhex(s.as_str().unwrap()))
                .collect(),
            stream: Stream::new(n["stream"].as_str().unwrap()),
            np: NumpyRandomState::new(n["np_seed"].as_u64().unwrap() as u32),
        };
        let arrays: Vec<(Vec<usize>, Vec<f32>)> = n["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["shape"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.as_u64().unwrap() as usize)
                        .collect(),
                    a["values"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_f64().unwrap() as f32)
                        .collect(),
                )
            })
            .collect();
        let mut c = SecAggClient::new(nid);
        for st in n["stages"].as_array().unwrap() {
            let cfg = record(&b64(&st["in"]));
            let stage = stage_of(&cfg).unwrap();
            assert_eq!(stage.name(), st["stage"].as_str().unwrap());
            let out = match stage {
                Stage::Setup => c.setup(&cfg, &mut e),
                Stage::ShareKeys => c.share_keys(&cfg, &mut e, fernet_time),
                Stage::CollectMaskedVectors => {
                    c.receive_shares(&cfg).unwrap();
                    let w = n["num_examples"].as_f64().unwrap();
                    c.mask(
                        &MaskInput {
                            arrays: &arrays,
                            weight: w,
                        },
                        &mut e,
                    )
                }
                Stage::Unmask => c.unmask(&cfg),
            }
            .unwrap_or_else(|err| panic!("node {nid} stage {}: {err}", stage.name()));
            match st["out"].as_str() {
                // the scenario's dropped node: its reply was an error
                None => {
                    dead.push(nid);
                    continue;
                }
                Some(want) => {
                    let ours = config_to_proto(&out).encode_to_vec();
                    assert_eq!(B64.encode(&ours), want, "node {nid} stage {}", stage.name());
                }
            }
            match stage {
                Stage::Setup => {
                    if let Some(ConfigValue::Bytes(p)) = out.get("pk1") {
                        pk1.insert(nid, p.clone());
                    }
                    setup = c.setup_params().cloned();
                }
                Stage::ShareKeys => {
                    neighbours.insert(nid, c.neighbours().to_vec());
                }
                Stage::CollectMaskedVectors => {
                    if let Some(ConfigValue::BytesList(l)) = out.get("masked_params") {
                        masked.push(l.clone());
                    }
                    active.push(nid);
                }
                Stage::Unmask => {
                    let (
                        Some(ConfigValue::IntList(_) | ConfigValue::UintList(_)),
                        Some(ConfigValue::BytesList(sh)),
                    ) = (out.get("nids"), out.get("shares"))
                    else {
                        panic!("unmask reply layout")
                    };
                    let ids: Vec<u64> = match out.get("nids").unwrap() {
                        ConfigValue::IntList(l) => l.iter().map(|&x| x as u64).collect(),
                        ConfigValue::UintList(l) => l.clone(),
                        _ => unreachable!(),
                    };
                    for (owner, s) in ids.into_iter().zip(sh) {
                        shares.entry(owner).or_default().push(s.clone());
                    }
                }
            }
        }
        assert_eq!(
            e.stream.taken as u64,
            n["stream_bytes"].as_u64().unwrap(),
            "node {nid}: random bytes drawn"
        );
        assert!(e.scalars.is_empty());
    }
    let setup = setup.unwrap();
    let sum = aggregate::sum_masked(&masked, setup.mod_range).unwrap();
    let agg = aggregate::unmask(sum, &setup, &active, &dead, &shares, &neighbours, &pk1).unwrap();
    let want = r["aggregate"].as_array().unwrap();
    for (i, (ours, w)) in agg.iter().zip(want).enumerate() {
        let wv: Vec<f64> = unhex(w["f64le"].as_str().unwrap())
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        if w["shape"].as_array().unwrap().is_empty() {
            // flwr 1.42's workflow does not rescale 0-d arrays (its in-place `vec += offset` on a
            // numpy scalar rebinds a name); the masked bytes above match, the decoding is its own
            continue;
        }
        assert_eq!(ours, &wv, "aggregate array {i}");
        let plain: Vec<f64> = r["plain_weighted_mean"][i]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        for (a, b) in ours.iter().zip(&plain) {
            // quantisation error: one step of 2c/T per node, over the weights
            assert!((a - b).abs() < 1e-4, "aggregate {a} vs plain mean {b}");
        }
    }
}

#[test]
fn a_whole_round_matches_flwr_byte_for_byte() {
    replay_round(&golden()["protocol"]["no_dropout"]);
}

#[test]
fn a_round_with_a_dropout_after_key_sharing_matches_flwr() {
    let g = golden();
    let r = &g["protocol"]["dropout_after_share_keys"];
    assert_eq!(r["fail_at"]["303"], "collect_masked_vectors");
    replay_round(r);
}
