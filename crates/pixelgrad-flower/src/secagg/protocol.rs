//! The client side of Flower's SecAgg+ (`secaggplus_mod` of flwr 1.42), stage by stage. Each
//! stage takes the `secaggplus_configs` ConfigRecord the server sent and returns the one to
//! reply with; the layout of both is Flower's:
//!
//! | stage | server sends | node replies |
//! | --- | --- | --- |
//! | `setup` | `sample_num`, `share_num`, `threshold` (int), `clipping_range` (float), `target_range`, `mod_range` (int), `max_weight` | `pk1`, `pk2`: its two public keys (PEM) |
//! | `share_keys` | `"<node id>": [pk1, pk2]` per neighbour, itself included | `dsts`: neighbour IDs, `ctxts`: per neighbour a Fernet token of `src | dst | len | seed share | key share` |
//! | `collect_masked_vectors` | `ctxts` and `srcs`: the tokens addressed to it, with their senders (plus the train instruction) | `masked_params`: `[q_ratio]` and the quantised parameters plus the private mask plus/minus one pairwise mask per sender, mod `mod_range`, as `np.save` int64 arrays |
//! | `unmask` | `active_nids`, `dead_nids` | `nids` = active + dead, `shares`: its share of each active node's mask seed and of each dead node's mask key |
//!
//! Stages must come in order (a new `setup` may restart at any point); every check of
//! Flower's client is made here too (types, the threshold, unique public keys, its own keys
//! listed correctly, ciphertexts from and to the right nodes), plus what a node should not
//! give out: the key share of a node the same request calls active, and its own key share
//! (a node answering is alive). Sizes a server chooses are bounded ([`MAX_SHARES`]).

use std::collections::HashMap;

use p384::{PublicKey, SecretKey};

use super::fernet::Fernet;
use super::keys;
use super::prg;
use super::quantize;
use super::randomness::Entropy;
use crate::npy;
use crate::records::{ConfigRecord, ConfigValue};
use crate::{FlowerError, Result};

/// The name of the ConfigRecord SecAgg+ messages carry (`RECORD_KEY_CONFIGS`).
pub const RECORD_KEY_CONFIGS: &str = "secaggplus_configs";
/// Most shares (and neighbours) a node makes or accepts in one round.
pub const MAX_SHARES: u64 = 4096;

/// SecAgg+'s stages, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Setup,
    ShareKeys,
    CollectMaskedVectors,
    Unmask,
}

impl Stage {
    const ALL: [Stage; 4] = [
        Stage::Setup,
        Stage::ShareKeys,
        Stage::CollectMaskedVectors,
        Stage::Unmask,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::ShareKeys => "share_keys",
            Stage::CollectMaskedVectors => "collect_masked_vectors",
            Stage::Unmask => "unmask",
        }
    }
    fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.name() == s)
    }
    fn next(self) -> Stage {
        let i = Stage::ALL.iter().position(|&s| s == self).unwrap_or(0);
        Stage::ALL[(i + 1) % 4]
    }
}

fn bad(msg: impl Into<String>) -> FlowerError {
    FlowerError::Protocol(format!("SecAgg+: {}", msg.into()))
}

/// The stage a `secaggplus_configs` record asks for.
pub fn stage_of(cfg: &ConfigRecord) -> Result<Stage> {
    match cfg.get("stage") {
        None => Err(bad(
            "the required key 'stage' is missing from the ConfigRecord",
        )),
        Some(ConfigValue::Str(s)) => Stage::parse(s).ok_or_else(|| {
            bad(format!(
                "unknown stage {:?}",
                s.chars().take(40).collect::<String>()
            ))
        }),
        Some(_) => Err(bad("the value of 'stage' must be a string")),
    }
}

/// The protocol parameters of a round (the setup stage's config).
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    pub sample_num: u64,
    pub share_num: u64,
    pub threshold: u64,
    pub clipping_range: f64,
    pub target_range: u64,
    pub mod_range: u64,
    pub max_weight: f64,
}

fn int_of(cfg: &ConfigRecord, key: &str) -> Result<u64> {
    match cfg.get(key) {
        None => Err(bad(format!("setup: the required key '{key}' is missing"))),
        Some(ConfigValue::Int(v)) if *v >= 0 => Ok(*v as u64),
        Some(ConfigValue::Uint(v)) => Ok(*v),
        Some(v) => Err(bad(format!(
            "setup: '{key}' must be a non-negative int, got {v:?}"
        ))),
    }
}

fn parse_setup(cfg: &ConfigRecord) -> Result<Setup> {
    let float = |key: &str, strict: bool| -> Result<f64> {
        match cfg.get(key) {
            Some(ConfigValue::Float(v)) => Ok(*v),
            Some(ConfigValue::Int(v)) if !strict => Ok(*v as f64),
            Some(ConfigValue::Uint(v)) if !strict => Ok(*v as f64),
            None => Err(bad(format!("setup: the required key '{key}' is missing"))),
            Some(v) => Err(bad(format!("setup: '{key}' must be a float, got {v:?}"))),
        }
    };
    let s = Setup {
        sample_num: int_of(cfg, "sample_num")?,
        share_num: int_of(cfg, "share_num")?,
        threshold: int_of(cfg, "threshold")?,
        clipping_range: float("clipping_range", true)?,
        target_range: int_of(cfg, "target_range")?,
        mod_range: int_of(cfg, "mod_range")?,
        max_weight: float("max_weight", false)?,
    };
    if s.share_num > MAX_SHARES || s.sample_num > MAX_SHARES {
        return Err(FlowerError::Limit {
            what: "the SecAgg+ shares (or sampled nodes) the server asks for".into(),
            found: s.share_num.max(s.sample_num),
            limit: MAX_SHARES,
        });
    }
    if s.threshold == 0 || s.threshold > s.share_num {
        return Err(bad(format!(
            "setup: threshold {} does not fit {} shares",
            s.threshold, s.share_num
        )));
    }
    if !(s.clipping_range > 0.0 && s.clipping_range.is_finite()) {
        return Err(bad(format!(
            "setup: clipping_range {} is not a positive number",
            s.clipping_range
        )));
    }
    if !(s.max_weight > 0.0 && s.max_weight.is_finite()) {
        return Err(bad(format!(
            "setup: max_weight {} is not a positive number",
            s.max_weight
        )));
    }
    if s.target_range == 0 || s.target_range >= 1 << 31 {
        return Err(bad(format!(
            "setup: target_range {} is outside 1..2^31 (numpy quantises to int32)",
            s.target_range
        )));
    }
    if s.mod_range < 2 || s.mod_range > 1 << 32 || s.mod_range <= s.target_range {
        return Err(bad(format!(
            "setup: mod_range {} must be in 2..=2^32 and above target_range {}",
            s.mod_range, s.target_range
        )));
    }
    Ok(s)
}

fn node_ids(v: Option<&ConfigValue>, key: &str) -> Result<Vec<u64>> {
    match v {
        None => Err(bad(format!("the required key '{key}' is missing"))),
        Some(ConfigValue::IntList(l)) => l
            .iter()
            .map(|&x| {
                u64::try_from(x).map_err(|_| bad(format!("'{key}' holds a negative node ID")))
            })
            .collect(),
        Some(ConfigValue::UintList(l)) => Ok(l.clone()),
        // Flower writes an empty list as an empty BoolList
        Some(ConfigValue::BoolList(l)) if l.is_empty() => Ok(Vec::new()),
        Some(_) => Err(bad(format!("the value of '{key}' must be a list of int"))),
    }
}

fn bytes_list(v: Option<&ConfigValue>, key: &str) -> Result<Vec<Vec<u8>>> {
    match v {
        None => Err(bad(format!("the required key '{key}' is missing"))),
        Some(ConfigValue::BytesList(l)) => Ok(l.clone()),
        Some(ConfigValue::BoolList(l)) if l.is_empty() => Ok(Vec::new()),
        Some(_) => Err(bad(format!("the value of '{key}' must be a list of bytes"))),
    }
}

/// A list of node IDs as Flower writes one (sint64 unless one is above `i64::MAX`; empty as an
/// empty bool list).
pub fn ids_value(ids: &[u64]) -> ConfigValue {
    if ids.is_empty() {
        ConfigValue::BoolList(Vec::new())
    } else if ids.iter().any(|&i| i > i64::MAX as u64) {
        ConfigValue::UintList(ids.to_vec())
    } else {
        ConfigValue::IntList(ids.iter().map(|&i| i as i64).collect())
    }
}

fn bytes_value(list: Vec<Vec<u8>>) -> ConfigValue {
    if list.is_empty() {
        ConfigValue::BoolList(Vec::new())
    } else {
        ConfigValue::BytesList(list)
    }
}

/// `src (u64 LE) | dst (u64 LE) | len(seed share) (u32 LE) | seed share | key share`.
pub fn plaintext_concat(src: u64, dst: u64, seed_share: &[u8], key_share: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + seed_share.len() + key_share.len());
    out.extend_from_slice(&src.to_le_bytes());
    out.extend_from_slice(&dst.to_le_bytes());
    out.extend_from_slice(&(seed_share.len() as u32).to_le_bytes());
    out.extend_from_slice(seed_share);
    out.extend_from_slice(key_share);
    out
}

/// The parts of [`plaintext_concat`]'s bytes.
pub fn plaintext_separate(p: &[u8]) -> Result<(u64, u64, Vec<u8>, Vec<u8>)> {
    if p.len() < 20 {
        return Err(bad("a decrypted key share is too short"));
    }
    let src = u64::from_le_bytes(p[..8].try_into().expect("8 bytes"));
    let dst = u64::from_le_bytes(p[8..16].try_into().expect("8 bytes"));
    let mark = u32::from_le_bytes(p[16..20].try_into().expect("4 bytes")) as usize;
    if 20 + mark > p.len() {
        return Err(bad("a decrypted key share has a bad length"));
    }
    Ok((src, dst, p[20..20 + mark].to_vec(), p[20 + mark..].to_vec()))
}

/// What the node masks: its (trained) parameters and its weight.
pub struct MaskInput<'a> {
    /// Parameter arrays in order: shape and values (C order).
    pub arrays: &'a [(Vec<usize>, Vec<f32>)],
    /// The weight Flower derives `q_ratio` from (`num_examples`).
    pub weight: f64,
}

/// One node's SecAgg+ state across the four stages of a round.
pub struct SecAggClient {
    nid: u64,
    current: Stage,
    setup: Option<Setup>,
    sk1: Option<SecretKey>,
    sk1_pem: Vec<u8>,
    pk1: Vec<u8>,
    sk2: Option<SecretKey>,
    pk2: Vec<u8>,
    rd_seed: Vec<u8>,
    seed_shares: HashMap<u64, Vec<u8>>,
    key_shares: HashMap<u64, Vec<u8>>,
    ss2: HashMap<u64, Vec<u8>>,
    pk1s: HashMap<u64, PublicKey>,
    neighbours: Vec<u64>,
    /// Senders whose tokens arrived in the collect stage, in order (their pairwise masks).
    available: Vec<u64>,
}

impl SecAggClient {
    /// A node with ID `nid` (the setup message's destination), before any stage.
    pub fn new(nid: u64) -> Self {
        SecAggClient {
            nid,
            current: Stage::Unmask,
            setup: None,
            sk1: None,
            sk1_pem: Vec::new(),
            pk1: Vec::new(),
            sk2: None,
            pk2: Vec::new(),
            rd_seed: Vec::new(),
            seed_shares: HashMap::new(),
            key_shares: HashMap::new(),
            ss2: HashMap::new(),
            pk1s: HashMap::new(),
            neighbours: Vec::new(),
            available: Vec::new(),
        }
    }

    /// The stage last completed (`Unmask` before the first round).
    pub fn current(&self) -> Stage {
        self.current
    }

    /// The round's parameters, once setup ran.
    pub fn setup_params(&self) -> Option<&Setup> {
        self.setup.as_ref()
    }

    /// Refuses `next` unless it follows the last stage (or is `setup`).
    pub fn check_next(&self, next: Stage) -> Result<()> {
        if next == Stage::Setup || next == self.current.next() {
            Ok(())
        } else {
            Err(bad(format!(
                "abort secure aggregation: expected the {} stage, received {}",
                self.current.next().name(),
                next.name()
            )))
        }
    }

    /// Stage `setup`: two fresh key pairs; replies with the public keys.
    pub fn setup(&mut self, cfg: &ConfigRecord, entropy: &mut dyn Entropy) -> Result<ConfigRecord> {
        self.check_next(Stage::Setup)?;
        let s = parse_setup(cfg)?;
        let sk1 = entropy.secret_key()?;
        let sk2 = entropy.secret_key()?;
        let pk1 = keys::public_to_pem(&sk1.public_key())?;
        let pk2 = keys::public_to_pem(&sk2.public_key())?;
        *self = SecAggClient {
            sk1_pem: keys::secret_to_pem(&sk1)?,
            sk1: Some(sk1),
            sk2: Some(sk2),
            pk1: pk1.clone(),
            pk2: pk2.clone(),
            setup: Some(s),
            current: Stage::Setup,
            ..SecAggClient::new(self.nid)
        };
        Ok(ConfigRecord(vec![
            ("pk1".into(), ConfigValue::Bytes(pk1)),
            ("pk2".into(), ConfigValue::Bytes(pk2)),
        ]))
    }

    /// Stage `share_keys`: shares of the mask seed and of the mask key, one encrypted for each
    /// neighbour. `now` is the Fernet timestamp (seconds since 1970).
    pub fn share_keys(
        &mut self,
        cfg: &ConfigRecord,
        entropy: &mut dyn Entropy,
        now: u64,
    ) -> Result<ConfigRecord> {
        self.check_next(Stage::ShareKeys)?;
        let s = self
            .setup
            .clone()
            .ok_or_else(|| bad("share_keys before setup"))?;
        let mut listed: Vec<(u64, Vec<u8>, Vec<u8>)> = Vec::new();
        for (k, v) in &cfg.0 {
            if k == "stage" {
                continue;
            }
            let nid: u64 = if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) {
                k.parse()
                    .map_err(|_| bad(format!("share_keys: {k:?} is not a node ID")))?
            } else {
                return Err(bad(format!(
                    "share_keys: {:?} is not a node ID",
                    k.chars().take(30).collect::<String>()
                )));
            };
            match v {
                ConfigValue::BytesList(l) if l.len() == 2 => {
                    listed.push((nid, l[0].clone(), l[1].clone()))
                }
                _ => {
                    return Err(bad(format!(
                        "share_keys: the value for '{k}' must be a list of two bytes"
                    )))
                }
            }
        }
        if listed.len() as u64 > MAX_SHARES {
            return Err(FlowerError::Limit {
                what: "the neighbours the server lists".into(),
                found: listed.len() as u64,
                limit: MAX_SHARES,
            });
        }
        if (listed.len() as u64) < s.threshold {
            return Err(bad("available neighbours number smaller than threshold"));
        }
        let mut seen = std::collections::HashSet::new();
        for (_, a, b) in &listed {
            if !seen.insert(a.clone()) || !seen.insert(b.clone()) {
                return Err(bad("some public keys are identical"));
            }
        }
        match listed.iter().find(|(n, _, _)| *n == self.nid) {
            Some((_, a, b)) if *a == self.pk1 && *b == self.pk2 => {}
            Some(_) => return Err(bad("this node's own public keys are listed incorrectly")),
            None => return Err(bad("this node is not among the neighbours listed")),
        }
        if listed.len() as u64 > s.share_num {
            return Err(bad(format!(
                "{} neighbours listed for {} shares",
                listed.len(),
                s.share_num
            )));
        }
        let mut seed = vec![0u8; 32];
        entropy.fill(&mut seed)?;
        let t = s.threshold as usize;
        let n = s.share_num as usize;
        // Coefficients as Flower draws them: all of the seed's blocks, then all of the key's.
        let mut next = |c: &mut [u8; 16]| entropy.fill(c);
        let seed_shares = super::shamir::create_shares(&seed, t, n, &mut next)?;
        let key_shares = super::shamir::create_shares(&self.sk1_pem, t, n, &mut next)?;
        let sk2 = self
            .sk2
            .clone()
            .ok_or_else(|| bad("share_keys before setup"))?;
        let (mut dsts, mut ctxts) = (Vec::new(), Vec::new());
        for (idx, (nid, pk1, pk2)) in listed.iter().enumerate() {
            self.pk1s.insert(*nid, keys::public_from_pem(pk1)?);
            if *nid == self.nid {
                self.seed_shares.insert(*nid, seed_shares[idx].clone());
                self.key_shares.insert(*nid, key_shares[idx].clone());
            } else {
                let shared = keys::shared_key(&sk2, &keys::public_from_pem(pk2)?);
                let plaintext =
                    plaintext_concat(self.nid, *nid, &seed_shares[idx], &key_shares[idx]);
                let mut iv = [0u8; 16];
                entropy.fill(&mut iv)?;
                ctxts.push(Fernet::new(&shared)?.encrypt(&plaintext, now, &iv));
                self.ss2.insert(*nid, shared);
                dsts.push(*nid);
            }
        }
        self.neighbours = listed.iter().map(|(n, _, _)| *n).collect();
        self.rd_seed = seed;
        self.current = Stage::ShareKeys;
        Ok(ConfigRecord(vec![
            ("dsts".into(), ids_value(&dsts)),
            ("ctxts".into(), bytes_value(ctxts)),
        ]))
    }

    /// Stage `collect_masked_vectors`, first half: decrypts and checks the shares addressed to
    /// this node (before any training is spent on a round that cannot complete).
    pub fn receive_shares(&mut self, cfg: &ConfigRecord) -> Result<()> {
        self.check_next(Stage::CollectMaskedVectors)?;
        let s = self
            .setup
            .clone()
            .ok_or_else(|| bad("collect_masked_vectors before setup"))?;
        let ctxts = bytes_list(cfg.get("ctxts"), "ctxts")?;
        let srcs = node_ids(cfg.get("srcs"), "srcs")?;
        if (ctxts.len() as u64) + 1 < s.threshold {
            return Err(bad("not enough available neighbour clients"));
        }
        if ctxts.len() != srcs.len() {
            return Err(bad(format!(
                "{} ciphertexts from {} sources",
                ctxts.len(),
                srcs.len()
            )));
        }
        let mut available = Vec::with_capacity(srcs.len());
        for (src, token) in srcs.iter().zip(&ctxts) {
            let key = self.ss2.get(src).ok_or_else(|| {
                bad(format!(
                    "a ciphertext from node {src}, which is not a neighbour"
                ))
            })?;
            let plain = Fernet::new(key)?.decrypt(token)?;
            let (actual, dst, seed_share, key_share) = plaintext_separate(&plain)?;
            if actual != *src {
                return Err(bad(format!(
                    "received a ciphertext from {actual} instead of {src}"
                )));
            }
            if dst != self.nid {
                return Err(bad(format!(
                    "received a ciphertext for node {dst} from node {src}"
                )));
            }
            if available.contains(src) {
                return Err(bad(format!("two ciphertexts from node {src}")));
            }
            available.push(*src);
            self.seed_shares.insert(*src, seed_share);
            self.key_shares.insert(*src, key_share);
        }
        self.available = available;
        Ok(())
    }

    /// Stage `collect_masked_vectors`, second half: the masked vector of `input` (call after
    /// [`Self::receive_shares`]).
    pub fn mask(&mut self, input: &MaskInput, entropy: &mut dyn Entropy) -> Result<ConfigRecord> {
        self.check_next(Stage::CollectMaskedVectors)?;
        let s = self
            .setup
            .clone()
            .ok_or_else(|| bad("collect_masked_vectors before setup"))?;
        let sk1 = self
            .sk1
            .clone()
            .ok_or_else(|| bad("collect_masked_vectors before setup"))?;
        if !(input.weight >= 0.0 && input.weight.is_finite()) {
            return Err(bad(format!(
                "the weight {} is not a non-negative number",
                input.weight
            )));
        }
        let (q_ratio, dq_ratio) = quantize::weight(input.weight, s.max_weight, s.target_range);
        let mut vec: Vec<Vec<i64>> = Vec::with_capacity(input.arrays.len() + 1);
        vec.push(vec![q_ratio]);
        let mut uniform = || entropy.uniform();
        for (_, values) in input.arrays {
            let scaled = quantize::scale(values, dq_ratio);
            let mut q = Vec::with_capacity(scaled.len());
            quantize::quantize_into(
                &scaled,
                s.clipping_range,
                s.target_range,
                &mut uniform,
                &mut q,
            )?;
            vec.push(q);
        }
        let sizes: Vec<usize> = vec.iter().map(Vec::len).collect();
        prg::visit_masks(&self.rd_seed, s.mod_range, &sizes, |i, j, m| {
            vec[i][j] = vec[i][j].wrapping_add(m as i64)
        })?;
        for other in self.available.clone() {
            let pk = self
                .pk1s
                .get(&other)
                .ok_or_else(|| bad(format!("no public key of node {other}")))?;
            let seed = keys::shared_key(&sk1, pk);
            let add = self.nid > other;
            prg::visit_masks(&seed, s.mod_range, &sizes, |i, j, m| {
                vec[i][j] = if add {
                    vec[i][j].wrapping_add(m as i64)
                } else {
                    vec[i][j].wrapping_sub(m as i64)
                }
            })?;
        }
        let m = s.mod_range as i64;
        let mut out = Vec::with_capacity(vec.len());
        let mut shapes: Vec<Vec<usize>> = vec![vec![1]];
        shapes.extend(input.arrays.iter().map(|(sh, _)| sh.clone()));
        for (values, shape) in vec.iter_mut().zip(&shapes) {
            for v in values.iter_mut() {
                *v = v.rem_euclid(m);
            }
            out.push(npy::encode_i64(shape, values));
        }
        self.current = Stage::CollectMaskedVectors;
        Ok(ConfigRecord(vec![(
            "masked_params".into(),
            ConfigValue::BytesList(out),
        )]))
    }

    /// Stage `unmask`: this node's shares of the active nodes' mask seeds and of the dead
    /// nodes' mask keys.
    pub fn unmask(&mut self, cfg: &ConfigRecord) -> Result<ConfigRecord> {
        self.check_next(Stage::Unmask)?;
        let s = self
            .setup
            .clone()
            .ok_or_else(|| bad("unmask before setup"))?;
        let active = node_ids(cfg.get("active_nids"), "active_nids")?;
        let dead = node_ids(cfg.get("dead_nids"), "dead_nids")?;
        if (active.len() as u64) < s.threshold {
            return Err(bad("available neighbours number smaller than threshold"));
        }
        if dead.contains(&self.nid) {
            return Err(bad("the server lists this node as dropped while it answers; it does not give out its own mask key"));
        }
        if let Some(n) = active.iter().find(|n| dead.contains(n)) {
            return Err(bad(format!(
                "node {n} is listed both active and dropped; both its shares would unmask it"
            )));
        }
        let mut shares = Vec::with_capacity(active.len() + dead.len());
        for n in &active {
            shares.push(
                self.seed_shares
                    .get(n)
                    .cloned()
                    .ok_or_else(|| bad(format!("no share of node {n}")))?,
            );
        }
        for n in &dead {
            shares.push(
                self.key_shares
                    .get(n)
                    .cloned()
                    .ok_or_else(|| bad(format!("no share of node {n}")))?,
            );
        }
        let mut nids = active;
        nids.extend(dead);
        self.current = Stage::Unmask;
        Ok(ConfigRecord(vec![
            ("nids".into(), ids_value(&nids)),
            ("shares".into(), bytes_value(shares)),
        ]))
    }

    /// The neighbours listed at `share_keys` (itself included).
    pub fn neighbours(&self) -> &[u64] {
        &self.neighbours
    }
}
