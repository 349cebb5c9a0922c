//! Recording and replaying traces on WebGL (see `trace.rs` for what a recording holds and
//! `pixelgrad_core::recording` for the concept): [`begin`], [`end`] and [`replay`] back
//! [`pixelgrad_core::Backend::trace_begin`], `trace_end` and `trace_replay`.
//!
//! A finished trace keeps only its constants (pinned); the textures its draws render into are
//! taken from the pool at their first draw and given back after their last use, as the graph
//! walk does, so a trace holds no intermediates between runs and its outputs are always fresh
//! textures (a replay never overwrites a value somebody holds). A replay samples the new inputs
//! where the recording sampled the old ones and issues the recorded draws in order (the same
//! programs, uniform values and viewports).

use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::recording::Source;
use pixelgrad_core::{Error, Result, Storage, Trace};

use crate::context::Shared;
use crate::fusion::tensor_of;
use crate::launch::Pass;
use crate::pool::PoolKey;
use crate::texture::GlTensor;
use crate::trace::{Draw, Recorder};

/// A finished WebGL trace. Dropping it unpins its constants.
pub(crate) struct GlTrace {
    sh: Rc<Shared>,
    /// Each slot's source and its texture's size and format.
    sources: Vec<Source>,
    keys: Vec<PoolKey>,
    /// Each constant slot's texture (pinned), by slot.
    consts: Vec<Option<glow::Texture>>,
    draws: Vec<Draw>,
    /// Per draw: the written slots whose last use it is (not outputs).
    frees: Vec<Vec<usize>>,
    /// Each input's element type (its length is in the core [`Trace`]).
    inputs: Vec<DType>,
    /// Each output's slot, element count and type.
    outputs: Vec<(usize, usize, DType)>,
    /// Held by the trace and by the tensors it lends its textures to while drawing, so their
    /// drops leave the textures alone.
    view: Rc<()>,
}

impl Drop for GlTrace {
    fn drop(&mut self) {
        let consts = std::mem::take(&mut self.consts);
        self.sh.steps.unpin(&self.sh.dev, consts.into_iter().flatten());
    }
}

/// The slots a draw touches.
fn touched(d: &Draw) -> impl Iterator<Item = usize> + '_ {
    d.inputs.iter().map(|&(_, s)| s).chain(d.targets.iter().copied())
}

/// Starts recording with `inputs` in slots `0..` (pending work is drawn first, outside the
/// recording); false where a recording or step is open or one storage is given twice.
pub(crate) fn begin(sh: &Rc<Shared>, inputs: &[&Storage]) -> bool {
    if sh.steps.tracing.borrow().is_some() || sh.steps.is_open() {
        return false;
    }
    let mut ins = Vec::with_capacity(inputs.len());
    for s in inputs {
        let Ok(t) = tensor_of(s, sh, "trace_begin") else { return false };
        ins.push((t.tex, t.key(), t.len, t.dtype));
    }
    let rec = Recorder::new(&ins);
    let started = rec.is_some();
    *sh.steps.tracing.borrow_mut() = rec;
    started
}

/// Ends the recording (drawing `outputs` first); `None` where none was open or the run
/// cannot be replayed.
pub(crate) fn end(sh: &Rc<Shared>, outputs: &[&Storage]) -> Option<Trace> {
    sh.steps.tracing.borrow().as_ref()?;
    let outs: Result<Vec<&GlTensor>> = outputs.iter().map(|s| tensor_of(s, sh, "trace_end")).collect();
    let mut rec = sh.steps.tracing.borrow_mut().take()?;
    let outs = match outs {
        Ok(o) if rec.slots.broken().is_none() => o,
        _ => {
            sh.steps.unpin(&sh.dev, rec.pinned);
            return None;
        }
    };
    // An output no draw touched (an upload, a weight) is kept like a constant.
    let mut out_slots = Vec::with_capacity(outs.len());
    for t in &outs {
        let slot = match rec.slots.slot(&t.tex) {
            Some(s) => s,
            None => rec.touch(t.tex, t.key(), false, &mut sh.steps.pins.borrow_mut()),
        };
        out_slots.push((slot, t.len, t.dtype));
    }
    let sources = rec.slots.sources().to_vec();
    let consts = rec.slots.slots().map(|(t, s)| (s == Source::Constant).then_some(*t)).collect();
    // Written textures are the pool's again (once their tensors let go of them).
    let written: Vec<glow::Texture> = rec.slots.slots().filter(|(_, s)| *s == Source::Written).map(|(t, _)| *t).collect();
    sh.steps.unpin(&sh.dev, written);
    let out_ids: Vec<usize> = out_slots.iter().map(|o| o.0).collect();
    let frees = rec.slots.last_uses(rec.draws.iter().map(touched), &out_ids);
    let lens = rec.inputs.iter().map(|&(l, _)| l).collect();
    let launches = rec.draws.len();
    let inner = GlTrace {
        sh: sh.clone(),
        sources,
        keys: rec.keys,
        consts,
        draws: rec.draws,
        frees,
        inputs: rec.inputs.iter().map(|&(_, d)| d).collect(),
        outputs: out_slots,
        view: Rc::new(()),
    };
    Some(Trace::new(lens, outputs.len(), launches, inner))
}

/// Issues the draws of `trace` again on `inputs` and returns its outputs.
pub(crate) fn replay(sh: &Rc<Shared>, trace: &Trace, inputs: &[&Storage]) -> Result<Vec<Storage>> {
    let t = trace
        .get::<GlTrace>()
        .ok_or_else(|| Error::backend("trace_replay", sh.name.clone(), "the trace was recorded by another backend"))?;
    if !Rc::ptr_eq(&t.sh, sh) {
        return Err(Error::backend("trace_replay", sh.name.clone(), "the trace was recorded on another context"));
    }
    sh.current()?;
    let ins: Vec<&GlTensor> = inputs.iter().map(|s| tensor_of(s, sh, "trace_replay")).collect::<Result<_>>()?;
    let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
    trace.check_inputs(&sh.name, &lens)?;
    for (i, (got, want)) in ins.iter().zip(&t.inputs).enumerate() {
        if got.dtype != *want {
            let msg = format!("input {i} is stored as {}, the trace was recorded with {}", got.dtype.name(), want.name());
            return Err(Error::backend("trace_replay", sh.name.clone(), msg));
        }
    }
    // The written slots' textures of this replay, taken from the pool at their first draw.
    let mut live: Vec<Option<glow::Texture>> = vec![None; t.sources.len()];
    let ran = issue(sh, t, &ins, &mut live);
    let missing = || Error::backend("trace_replay", sh.name.clone(), "internal: an output slot without a texture");
    let outs = ran.and_then(|()| {
        t.outputs
            .iter()
            .map(|&(slot, len, dtype)| -> Result<Storage> {
                let key = t.keys[slot];
                let tensor = |tex| GlTensor { tex, w: key.0, h: key.1, len, shared: sh.dev.clone(), token: None, dtype };
                Ok(match t.sources[slot] {
                    Source::Input(i) => inputs[i].clone(),
                    Source::Constant => {
                        let tex = t.consts[slot].ok_or_else(missing)?;
                        sh.steps.pins.borrow_mut().hold(tex);
                        Storage::new(tensor(tex))
                    }
                    Source::Written => Storage::new(tensor(live[slot].take().ok_or_else(missing)?)),
                })
            })
            .collect::<Result<Vec<_>>>()
    });
    // Whatever is still taken (after a failed draw) goes back.
    for (slot, tex) in live.into_iter().enumerate() {
        if let Some(tex) = tex {
            let key = t.keys[slot];
            sh.dev.release(tex, key, crate::texture::texture_bytes(key, sh.dev.format));
        }
    }
    outs
}

/// Issues the draws of `t`, taking and giving back the written slots' textures in `live`.
fn issue(sh: &Rc<Shared>, t: &GlTrace, ins: &[&GlTensor], live: &mut [Option<glow::Texture>]) -> Result<()> {
    for (k, d) in t.draws.iter().enumerate() {
        for s in touched(d) {
            if t.sources[s] == Source::Written && live[s].is_none() {
                live[s] = Some(sh.dev.pooled_or_new(t.keys[s], "trace_replay")?);
            }
        }
        // The trace's textures, lent as tensors for the draw (their drops leave them).
        let view = |slot: usize| -> Result<GlTensor> {
            let tex = match t.sources[slot] {
                Source::Written => live[slot],
                _ => t.consts[slot],
            };
            let tex = tex.ok_or_else(|| Error::backend("trace_replay", sh.name.clone(), "internal: a slot without a texture"))?;
            let key = t.keys[slot];
            Ok(GlTensor { tex, w: key.0, h: key.1, len: 0, shared: sh.dev.clone(), token: Some(t.view.clone()), dtype: DType::F32 })
        };
        let views: Vec<Option<GlTensor>> = d
            .inputs
            .iter()
            .map(|&(_, s)| if let Source::Input(_) = t.sources[s] { Ok(None) } else { view(s).map(Some) })
            .collect::<Result<_>>()?;
        let inputs = d
            .inputs
            .iter()
            .zip(&views)
            .map(|(&(n, s), v)| match (t.sources[s], v) {
                (Source::Input(i), _) => Ok((n, ins[i])),
                (_, v) => v.as_ref().map(|v| (n, v)).ok_or_else(|| Error::backend("trace_replay", sh.name.clone(), "internal: no view")),
            })
            .collect::<Result<Vec<_>>>()?;
        let pass = Pass { op: d.op, spec: d.spec, inputs, uniforms: d.uniforms.clone() };
        let targets = d.targets.iter().map(|&s| view(s).map(|v| v.tex)).collect::<Result<Vec<_>>>()?;
        sh.draw_replayed(&pass, &targets, d.w, d.h, d.len)?;
        for &s in &t.frees[k] {
            if let Some(tex) = live[s].take() {
                let key = t.keys[s];
                sh.dev.release(tex, key, crate::texture::texture_bytes(key, sh.dev.format));
            }
        }
    }
    Ok(())
}
