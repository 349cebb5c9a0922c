//! A training run saved to go on later: a [`Checkpoint`] file (safetensors: weights and
//! optimizer state as tensors) whose header also holds where training was ([`Position`]),
//! the loss scaler's state and the step and epoch logs so far. [`save`] writes it through
//! `pixelgrad_durable` (temporary file, fsync, rename), so a crash leaves the previous
//! checkpoint or the new one, never a torn file; [`load`] reads it back for
//! [`crate::train::FitOptions::resume`].
//!
//! Floats that decide the continuation (the epoch's sums, the logged losses) are stored as
//! their bit patterns, so a resumed run is bit-identical to an uninterrupted one.

use std::collections::HashMap;
use std::path::Path;

use pixelgrad_core::{Error, Result};
use serde_json::{json, Value};

use crate::checkpoint::Checkpoint;
use crate::train::{EpochLog, Position, Resume, ResumePoint, StepLog};

const META_POSITION: &str = "pixelgrad.resume.position";
const META_SCALE: &str = "pixelgrad.resume.loss_scale";
const META_STEPS: &str = "pixelgrad.resume.steps";
const META_EPOCHS: &str = "pixelgrad.resume.epochs";

fn f32_bits(v: f32) -> Value {
    json!(v.to_bits())
}

fn opt_bits(v: Option<f32>) -> Value {
    v.map_or(Value::Null, f32_bits)
}

/// The run as checkpoint bytes, with `metadata` (e.g. the options that made it) in the header.
pub fn to_bytes(point: &ResumePoint<'_>, metadata: &HashMap<String, String>) -> Result<Vec<u8>> {
    let p = point.position;
    let mut meta = metadata.clone();
    let position = json!({
        "epoch": p.epoch,
        "batch": p.batch,
        "step": p.step,
        "epoch_loss": p.epoch_loss.to_bits(),
        "epoch_correct": p.epoch_correct.to_bits(),
        "epoch_samples": p.epoch_samples,
    });
    meta.insert(META_POSITION.into(), position.to_string());
    if let Some(s) = point.loss_scale {
        meta.insert(META_SCALE.into(), json!(s.map(f32::to_bits)).to_string());
    }
    let steps: Vec<Value> =
        point.steps.iter().map(|s| json!([s.step, s.epoch, f32_bits(s.loss), opt_bits(s.accuracy), f32_bits(s.lr)])).collect();
    meta.insert(META_STEPS.into(), Value::Array(steps).to_string());
    let epochs: Vec<Value> = point
        .epochs
        .iter()
        .map(|e| json!([e.epoch, f32_bits(e.train_loss), opt_bits(e.train_accuracy), opt_bits(e.test_loss), opt_bits(e.test_accuracy)]))
        .collect();
    meta.insert(META_EPOCHS.into(), Value::Array(epochs).to_string());
    point.checkpoint.to_bytes(&meta)
}

/// Reads bytes written by [`to_bytes`]: the run and the header's other metadata.
pub fn from_bytes(bytes: &[u8]) -> Result<(Resume, HashMap<String, String>)> {
    let (checkpoint, mut meta) = Checkpoint::from_bytes(bytes)?;
    let bad = |m: String| Error::invalid("resume file", m);
    let has_scale = meta.contains_key(META_SCALE);
    let mut take = |key: &str| -> Result<Value> {
        let s = meta.remove(key).ok_or_else(|| bad(format!("no '{key}' in the header (a checkpoint, but not of a resumable run)")))?;
        serde_json::from_str(&s).map_err(|e| bad(format!("'{key}': {e}")))
    };
    let pos = take(META_POSITION)?;
    let steps = take(META_STEPS)?;
    let epochs = take(META_EPOCHS)?;
    let scale = if has_scale { Some(take(META_SCALE)?) } else { None };
    let uint = |v: &Value, what: &str| -> Result<u64> { v.as_u64().ok_or_else(|| bad(format!("{what} is not a whole number: {v}"))) };
    let size =
        |v: &Value, what: &str| -> Result<usize> { usize::try_from(uint(v, what)?).map_err(|_| bad(format!("{what} is too large"))) };
    let f32_of = |v: &Value, what: &str| -> Result<f32> {
        let b = uint(v, what)?;
        u32::try_from(b).map(f32::from_bits).map_err(|_| bad(format!("{what} is not an f32 bit pattern")))
    };
    let opt_f32 = |v: &Value, what: &str| -> Result<Option<f32>> {
        if v.is_null() {
            Ok(None)
        } else {
            f32_of(v, what).map(Some)
        }
    };
    let position = Position {
        epoch: size(&pos["epoch"], "epoch")?,
        batch: size(&pos["batch"], "batch")?,
        step: size(&pos["step"], "step")?,
        epoch_loss: f64::from_bits(uint(&pos["epoch_loss"], "epoch_loss")?),
        epoch_correct: f64::from_bits(uint(&pos["epoch_correct"], "epoch_correct")?),
        epoch_samples: size(&pos["epoch_samples"], "epoch_samples")?,
    };
    let rows = |v: &Value, what: &str, width: usize| -> Result<Vec<Vec<Value>>> {
        let a = v.as_array().ok_or_else(|| bad(format!("{what} is not a list")))?;
        a.iter()
            .map(|r| match r.as_array() {
                Some(r) if r.len() == width => Ok(r.clone()),
                _ => Err(bad(format!("{what}: a row is not a list of {width}"))),
            })
            .collect()
    };
    let steps = rows(&steps, "steps", 5)?
        .iter()
        .map(|r| {
            Ok(StepLog {
                step: size(&r[0], "step")?,
                epoch: size(&r[1], "epoch")?,
                loss: f32_of(&r[2], "loss")?,
                accuracy: opt_f32(&r[3], "accuracy")?,
                lr: f32_of(&r[4], "lr")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let epochs = rows(&epochs, "epochs", 5)?
        .iter()
        .map(|r| {
            Ok(EpochLog {
                epoch: size(&r[0], "epoch")?,
                train_loss: f32_of(&r[1], "train_loss")?,
                train_accuracy: opt_f32(&r[2], "train_accuracy")?,
                test_loss: opt_f32(&r[3], "test_loss")?,
                test_accuracy: opt_f32(&r[4], "test_accuracy")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let loss_scale = match scale {
        None => None,
        Some(v) => match v.as_array().map(|a| a.iter().map(|x| f32_of(x, "loss scale")).collect::<Result<Vec<_>>>()) {
            Some(Ok(s)) if s.len() == 3 => Some([s[0], s[1], s[2]]),
            _ => return Err(bad("the loss scale is not three f32 bit patterns".into())),
        },
    };
    Ok((Resume { checkpoint, position, loss_scale, steps, epochs }, meta))
}

/// Writes the run to `path` durably (temporary file, fsync, rename, fsync the folder).
pub fn save(point: &ResumePoint<'_>, path: &Path, metadata: &HashMap<String, String>) -> Result<()> {
    let bytes = to_bytes(point, metadata)?;
    pixelgrad_durable::write(path, bytes).map_err(|e| Error::io(path, e))
}

/// Reads a run written by [`save`], and the header's other metadata.
pub fn load(path: &Path) -> Result<(Resume, HashMap<String, String>)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    from_bytes(&bytes).map_err(|e| match e {
        Error::Invalid { what, msg } => Error::Invalid { what: format!("{}: {what}", path.display()), msg },
        other => other,
    })
}
