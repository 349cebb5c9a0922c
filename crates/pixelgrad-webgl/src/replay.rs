//! Recording and replaying traces on WebGL (see `trace.rs` for what a recording holds and
//! `pixelgrad_core::recording` for the concept): [`begin`], [`end`] and [`replay`] back
//! [`pixelgrad_core::Backend::trace_begin`], `trace_end` and `trace_replay`.
//!
//! A replay samples the new inputs where the recording sampled the old ones and issues the
//! recorded draws in order (the same programs, uniform values and viewports) into the recorded
//! textures, then returns its outputs. A texture the trace renders into that a caller still
//! holds (last run's output, kept) is replaced by a fresh one first: a replay never overwrites
//! a value somebody holds.

use std::cell::RefCell;
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

/// A finished WebGL trace. Dropping it unpins its textures.
pub(crate) struct GlTrace {
    sh: Rc<Shared>,
    /// Each slot's source and its texture's size and format.
    sources: Vec<Source>,
    keys: Vec<PoolKey>,
    /// Each slot's texture (`None` for the inputs).
    texs: RefCell<Vec<Option<glow::Texture>>>,
    draws: Vec<Draw>,
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
        let texs = std::mem::take(&mut *self.texs.borrow_mut());
        self.sh.steps.unpin(&self.sh.dev, texs.into_iter().flatten());
    }
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
    let sources: Vec<Source> = rec.slots.slots().map(|(_, s)| s).collect();
    let texs = rec.slots.slots().map(|(t, s)| (!matches!(s, Source::Input(_))).then_some(*t)).collect();
    let lens = rec.inputs.iter().map(|&(l, _)| l).collect();
    let launches = rec.draws.len();
    let inner = GlTrace {
        sh: sh.clone(),
        sources,
        keys: rec.keys,
        texs: RefCell::new(texs),
        draws: rec.draws,
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
    let mut texs = t.texs.borrow_mut();
    // Textures the trace renders into that a caller still holds get fresh ones.
    for (slot, src) in t.sources.iter().enumerate() {
        let Some(old) = texs[slot].filter(|&x| *src == Source::Written && sh.steps.pins.borrow().held(x)) else { continue };
        let key = t.keys[slot];
        let fresh = sh.dev.pooled_or_new(key, "trace_replay")?;
        sh.steps.pins.borrow_mut().pin(fresh, key, 0);
        texs[slot] = Some(fresh);
        sh.steps.unpin(&sh.dev, [old]);
    }
    // The trace's own textures, lent as tensors for the draws (their drops leave them).
    let views: Vec<Option<GlTensor>> = texs
        .iter()
        .zip(&t.keys)
        .map(|(tex, key)| {
            tex.map(|tex| GlTensor {
                tex,
                w: key.0,
                h: key.1,
                len: 0,
                shared: sh.dev.clone(),
                token: Some(t.view.clone()),
                dtype: DType::F32,
            })
        })
        .collect();
    let tensor = |slot: usize| -> Result<&GlTensor> {
        match t.sources[slot] {
            Source::Input(i) => Ok(ins[i]),
            _ => views[slot].as_ref().ok_or_else(|| Error::backend("trace_replay", sh.name.clone(), "internal: a slot without a texture")),
        }
    };
    for d in &t.draws {
        let inputs = d.inputs.iter().map(|&(n, s)| Ok((n, tensor(s)?))).collect::<Result<Vec<_>>>()?;
        let pass = Pass { op: d.op, spec: d.spec, inputs, uniforms: d.uniforms.clone() };
        let targets = d.targets.iter().map(|&s| tensor(s).map(|x| x.tex)).collect::<Result<Vec<_>>>()?;
        sh.draw_replayed(&pass, &targets, d.w, d.h, d.len)?;
    }
    let outs = t
        .outputs
        .iter()
        .map(|&(slot, len, dtype)| -> Result<Storage> {
            Ok(match t.sources[slot] {
                Source::Input(i) => inputs[i].clone(),
                _ => {
                    let v = tensor(slot)?;
                    sh.steps.pins.borrow_mut().hold(v.tex);
                    Storage::new(GlTensor { tex: v.tex, w: v.w, h: v.h, len, shared: sh.dev.clone(), token: None, dtype })
                }
            })
        })
        .collect::<Result<Vec<_>>>()?;
    drop(views);
    Ok(outs)
}
