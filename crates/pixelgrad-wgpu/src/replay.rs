//! Recording and replaying traces on WebGPU (see `trace.rs` for what a recording holds and
//! `pixelgrad_core::recording` for the concept): [`begin`], [`end`] and [`replay`] back
//! [`pixelgrad_core::Backend::trace_begin`], `trace_end` and `trace_replay`.
//!
//! A replay binds the new inputs where the recording bound the old ones, encodes the recorded
//! commands in order into the open submission (flushed first, so parameter slots repeat from
//! one replay to the next and each command's bind group of the last replay is reused when it
//! binds the same buffers) and returns its outputs. A buffer the trace writes that a caller
//! still holds (last run's output, kept) is replaced by a fresh one first: a replay never
//! overwrites a value somebody holds.

use std::cell::RefCell;
use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::recording::Source;
use pixelgrad_core::{Error, Result, Storage, Trace};

use crate::context::{Gpu, GpuTensor};
use crate::fusion;
use crate::pool::Kind;
use crate::trace::{Command, Recorder};

/// A finished WebGPU trace. Dropping it unpins its buffers.
pub(crate) struct GpuTrace {
    gpu: Rc<Gpu>,
    /// Each slot's source, and its buffer (`None` for the inputs).
    sources: Vec<Source>,
    bufs: RefCell<Vec<Option<wgpu::Buffer>>>,
    commands: Vec<Command>,
    /// Each input's element type (its length is in the core [`Trace`]).
    inputs: Vec<DType>,
    /// Each output's slot, element count and type.
    outputs: Vec<(usize, usize, DType)>,
}

impl Drop for GpuTrace {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut *self.bufs.borrow_mut());
        self.gpu.unpin(bufs.into_iter().flatten());
    }
}

/// Starts recording with `inputs` in slots `0..` (pending inputs and earlier pending work are
/// computed first, outside the recording); false where a recording or step is open or one
/// storage is given twice.
pub(crate) fn begin(gpu: &Rc<Gpu>, inputs: &[&Storage]) -> bool {
    if gpu.tracing.borrow().is_some() || gpu.step_open() || fusion::settle(gpu).is_err() {
        return false;
    }
    let mut ins = Vec::with_capacity(inputs.len());
    for s in inputs {
        let Ok(t) = fusion::tensor(gpu, "trace_begin", s) else { return false };
        ins.push((t.buffer().clone(), t.len, t.dtype));
    }
    let rec = Recorder::new(&ins);
    let started = rec.is_some();
    *gpu.tracing.borrow_mut() = rec;
    started
}

/// Ends the recording (computing `outputs` first); `None` where none was open or the run
/// cannot be replayed.
pub(crate) fn end(gpu: &Rc<Gpu>, outputs: &[&Storage]) -> Option<Trace> {
    gpu.tracing.borrow().as_ref()?;
    let outs: Result<Vec<&GpuTensor>> = outputs.iter().map(|s| fusion::tensor(gpu, "trace_end", s)).collect();
    // Work still pending reads only pinned memory; it runs after the recording.
    let mut rec = gpu.tracing.borrow_mut().take()?;
    let outs = match outs {
        Ok(o) if rec.slots.broken().is_none() => o,
        _ => {
            gpu.unpin(rec.pinned);
            return None;
        }
    };
    // An output no command touched (an upload, a weight) is kept like a constant.
    let mut out_slots = Vec::with_capacity(outs.len());
    for t in &outs {
        let slot = match rec.slots.slot(t.buffer()) {
            Some(s) => s,
            None => gpu.trace_read(&mut rec, t.buffer()),
        };
        out_slots.push((slot, t.len, t.dtype));
    }
    let sources: Vec<Source> = rec.slots.slots().map(|(_, s)| s).collect();
    let bufs = rec.slots.slots().map(|(b, s)| (!matches!(s, Source::Input(_))).then(|| b.clone())).collect();
    let lens = rec.inputs.iter().map(|&(l, _)| l).collect();
    let launches = rec.commands.len();
    let inner = GpuTrace {
        gpu: gpu.clone(),
        sources,
        bufs: RefCell::new(bufs),
        commands: rec.commands,
        inputs: rec.inputs.iter().map(|&(_, d)| d).collect(),
        outputs: out_slots,
    };
    Some(Trace::new(lens, outputs.len(), launches, inner))
}

/// Launches the commands of `trace` again on `inputs` and returns its outputs.
pub(crate) fn replay(gpu: &Rc<Gpu>, trace: &Trace, inputs: &[&Storage]) -> Result<Vec<Storage>> {
    let t = trace
        .get::<GpuTrace>()
        .ok_or_else(|| Error::backend("trace_replay", gpu.backend_name(), "the trace was recorded by another backend"))?;
    if !Rc::ptr_eq(&t.gpu, gpu) {
        return Err(Error::backend("trace_replay", gpu.backend_name(), "the trace was recorded on another device"));
    }
    let ins: Vec<&GpuTensor> = inputs.iter().map(|s| fusion::tensor(gpu, "trace_replay", s)).collect::<Result<_>>()?;
    let lens: Vec<usize> = ins.iter().map(|t| t.len).collect();
    trace.check_inputs(&gpu.backend_name(), &lens)?;
    for (i, (got, want)) in ins.iter().zip(&t.inputs).enumerate() {
        if got.dtype != *want {
            let msg = format!("input {i} is stored as {}, the trace was recorded with {}", got.dtype.name(), want.name());
            return Err(Error::backend("trace_replay", gpu.backend_name(), msg));
        }
    }
    gpu.check("trace_replay")?;
    // Parameter slots from 0, as in the last replay: the cached bind groups stay valid.
    gpu.flush()?;
    let mut bufs = t.bufs.borrow_mut();
    // Memory the trace writes that a caller still holds gets a fresh buffer.
    for (slot, src) in t.sources.iter().enumerate() {
        let Some(old) = bufs[slot].as_ref().filter(|b| *src == Source::Written && gpu.held(b)) else { continue };
        let (fresh, _) = gpu.alloc("trace_replay", Kind::Tensor, old.size())?;
        gpu.pin_fresh(&fresh);
        if let Some(old) = bufs[slot].replace(fresh) {
            gpu.unpin([old]);
        }
    }
    let buffer = |slot: usize| -> &wgpu::Buffer {
        match t.sources[slot] {
            Source::Input(i) => ins[i].buffer(),
            // Every other slot has its buffer (set when the trace was made).
            _ => bufs[slot].as_ref().unwrap_or(ins[0].buffer()),
        }
    };
    for c in &t.commands {
        match c {
            Command::Dispatch { label, pipeline, layout, params, grid, binds, status, cache } => {
                let slot = gpu.reserve_slot(params)?;
                let bound: Vec<&wgpu::Buffer> = binds.iter().map(|&b| buffer(b)).collect();
                let mut cache = cache.borrow_mut();
                let hit = cache
                    .as_ref()
                    .is_some_and(|(s, b, _)| *s == slot && b.len() == bound.len() && b.iter().zip(&bound).all(|(a, b)| a == *b));
                if !hit {
                    let group = gpu.bind(label, layout, slot, &bound, *status);
                    *cache = Some((slot, bound.iter().map(|&b| b.clone()).collect(), group));
                }
                if let Some((_, _, group)) = cache.as_ref() {
                    gpu.encode_dispatch(pipeline, group, *grid, *status);
                }
                gpu.count_replayed();
            }
            Command::Copy { src, src_off, dst, dst_off, bytes } => gpu.copy_at(buffer(*src), *src_off, buffer(*dst), *dst_off, *bytes),
        }
    }
    let outs = t
        .outputs
        .iter()
        .map(|&(slot, len, dtype)| match t.sources[slot] {
            Source::Input(i) => inputs[i].clone(),
            _ => Storage::new(GpuTensor::pinned(gpu, buffer(slot).clone(), len, dtype)),
        })
        .collect();
    Ok(outs)
}
