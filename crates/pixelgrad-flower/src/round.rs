//! One round of local work on the server's parameters: check they fit the model, load them,
//! train, and produce the update to send — clipped (the server's `clipping_norm`, then the
//! node's own DP clip) on the device, read back once, and noised on the host from a
//! cryptographically seeded generator ([`crate::noise`]).

use pixelgrad_core::{Device, Tensor};

use crate::dp;
use crate::learner::{FitStats, Learner, RoundConfig};
use crate::noise::Noise;
use crate::npy::NdArray;
use crate::options::NodeOptions;
use crate::records::{ArrayRecord, ConfigRecord};
use crate::{FlowerError, Result};

/// Flower's config key of client-side clipping.
pub const KEY_CLIPPING_NORM: &str = "clipping_norm";

/// Checks that `arrays` fit `params` (count and shapes, in order).
pub fn check_fit(arrays: &ArrayRecord, params: &[Tensor]) -> Result<()> {
    if arrays.0.len() != params.len() {
        let server: Vec<String> = arrays
            .0
            .iter()
            .map(|(k, a)| format!("{k} {:?}", a.shape))
            .collect();
        let local: Vec<String> = params.iter().map(|p| format!("{:?}", p.dims())).collect();
        return Err(FlowerError::Mismatch(format!(
            "the server sent {} arrays [{}], the local model has {} parameters [{}]",
            arrays.0.len(),
            server.join(", "),
            params.len(),
            local.join(", ")
        )));
    }
    for (i, ((k, a), p)) in arrays.0.iter().zip(params).enumerate() {
        if a.shape != p.dims() {
            return Err(FlowerError::Mismatch(format!(
                "array {i} ('{k}') has shape {:?} but local parameter {i} has shape {:?}",
                a.shape,
                p.dims()
            )));
        }
    }
    Ok(())
}

pub fn upload(dev: &Device, arrays: &ArrayRecord) -> Result<Vec<Tensor>> {
    arrays
        .0
        .iter()
        .map(|(_, a)| {
            Tensor::from_vec(dev, &a.data, a.shape.clone()).map_err(FlowerError::engine("upload"))
        })
        .collect()
}

/// Reads device tensors back (async: no blocking read in the browser).
pub async fn read_back(ts: &[Tensor]) -> Result<Vec<NdArray>> {
    let mut out = Vec::with_capacity(ts.len());
    for t in ts {
        let v = t
            .to_vec_async()
            .await
            .map_err(FlowerError::engine("readback"))?;
        out.push(NdArray::new(t.dims().to_vec(), v)?);
    }
    Ok(out)
}

/// A positive whole number from the config (`key`), or `default` when it is not there.
fn count(cfg: &ConfigRecord, key: &str, default: u64) -> Result<u64> {
    match cfg.get(key) {
        None => Ok(default),
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 1.0 && x.fract() == 0.0 && x < 2f64.powi(53) => {
                Ok(x as u64)
            }
            _ => Err(FlowerError::Protocol(format!(
                "'{key}' must be a positive whole number, got {v:?}"
            ))),
        },
    }
}

/// The round's settings from the server's config within the node's ceilings.
pub fn round_config(cfg: &ConfigRecord, opts: &NodeOptions, round: u64) -> Result<RoundConfig> {
    let epochs = count(cfg, "local-epochs", opts.epochs as u64)?;
    if epochs > opts.max_epochs as u64 {
        return Err(FlowerError::limit(
            "the local epochs the server asks for ('local-epochs'; raise the node's max epochs to allow more)",
            epochs,
            opts.max_epochs as u64,
        ));
    }
    let batch_size = count(cfg, "batch-size", opts.batch_size as u64)?;
    let lr = match cfg.get("lr") {
        None => opts.lr,
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 && (x as f32).is_finite() => x as f32,
            _ => {
                return Err(FlowerError::Protocol(format!(
                    "'lr' must be a finite non-negative number, got {v:?}"
                )))
            }
        },
    };
    Ok(RoundConfig {
        server_round: round,
        epochs: epochs as usize,
        // a batch larger than any shard is a full batch; no need to keep the server's number
        batch_size: usize::try_from(batch_size)
            .unwrap_or(usize::MAX)
            .min(1 << 24),
        lr,
    })
}

/// The clipping and noise a node applies of its own accord in a round (local or distributed DP).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OwnDp {
    pub clip: Option<f64>,
    pub noise_std: Option<f64>,
}

/// What a round of local training produced, on the host.
#[derive(Clone, Debug)]
pub struct Update {
    /// The parameters to send: the server's plus the (clipped, noised) update.
    pub arrays: Vec<NdArray>,
    pub stats: FitStats,
    /// L2 norm of the update before any clipping.
    pub update_norm: f64,
    /// The smallest clipping norm applied, if any.
    pub clipped_to: Option<f64>,
    pub noise_std: Option<f64>,
    /// Seconds of training.
    pub seconds: f64,
}

/// The server's `clipping_norm` in a train config (client-side fixed clipping), if any.
pub fn server_clip(cfg: &ConfigRecord) -> Result<Option<f64>> {
    match cfg.get(KEY_CLIPPING_NORM) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(c) if c > 0.0 && c.is_finite() => Ok(Some(c)),
            _ => Err(FlowerError::Protocol(format!(
                "'{KEY_CLIPPING_NORM}' must be a positive number, got {v:?}"
            ))),
        },
    }
}

/// Loads `arrays` into the learner, trains it as `cfg` asks within `opts`, and returns the
/// update to send. Client-side fixed clipping (the server's `clipping_norm`) comes first, then
/// the node's own clip and noise: the order Flower's mods run in when both are present.
pub async fn train_update<L: Learner>(
    learner: &mut L,
    opts: &NodeOptions,
    arrays: &ArrayRecord,
    cfg: &ConfigRecord,
    round: u64,
    own: OwnDp,
    now: impl Fn() -> f64,
) -> Result<Update> {
    let params = learner.params();
    check_fit(arrays, &params)?;
    let rc = round_config(cfg, opts, round)?;
    let clip = server_clip(cfg)?;
    let dev = learner.device().clone();
    let reference = upload(&dev, arrays)?;
    learner.set_params(&reference)?;
    let t0 = now();
    let stats = learner.fit(&rc).await?;
    let seconds = now() - t0;
    let trained = learner.params();
    let norm_t = dp::update_norm(&trained, &reference).map_err(FlowerError::engine("dp"))?;
    let mut sent = trained;
    for c in [clip, own.clip].into_iter().flatten() {
        sent = dp::clip_update(&sent, &reference, c as f32)
            .map_err(FlowerError::engine("dp"))?
            .0;
    }
    let update_norm = norm_t
        .to_vec_async()
        .await
        .map_err(FlowerError::engine("dp"))?
        .first()
        .copied()
        .unwrap_or(f32::NAN) as f64;
    let mut host = read_back(&sent).await?;
    if let Some(std) = own.noise_std {
        let mut noise = Noise::from_os()?;
        for a in &mut host {
            noise.add(&mut a.data, std);
        }
    }
    let clipped_to = match (clip, own.clip) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(Update {
        arrays: host,
        stats,
        update_norm,
        clipped_to,
        noise_std: own.noise_std,
        seconds,
    })
}
