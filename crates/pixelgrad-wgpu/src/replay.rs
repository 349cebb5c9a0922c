//! Recording and replaying traces on WebGPU (see `trace.rs` for what a recording holds and
//! `pixelgrad_core::recording` for the concept): [`begin`], [`end`] and [`replay`] back
//! [`pixelgrad_core::Backend::trace_begin`], `trace_end` and `trace_replay`.
//!
//! A finished trace keeps only its constants (pinned); the memory its commands write is taken
//! from the pool when first written and given back after its last use, as the graph walk does,
//! so a trace holds no intermediates between runs and its outputs are always fresh buffers (a
//! replay never overwrites a value somebody holds). A replay binds the new inputs where the
//! recording bound the old ones and encodes the recorded commands in order into the open
//! submission (flushed first, so parameter slots repeat from one replay to the next and each
//! command's bind group of the last replay is reused while it binds the same buffers).

use std::rc::Rc;

use pixelgrad_core::kernel::DType;
use pixelgrad_core::recording::Source;
use pixelgrad_core::{Error, Result, Storage, Trace};

use crate::context::{Gpu, GpuTensor};
use crate::fusion;
use crate::pool::Kind;
use crate::trace::{Command, Recorder};

/// A finished WebGPU trace. Dropping it unpins its constants.
pub(crate) struct GpuTrace {
    gpu: Rc<Gpu>,
    /// Each slot's source.
    sources: Vec<Source>,
    /// Each constant slot's buffer (pinned), by slot.
    consts: Vec<Option<wgpu::Buffer>>,
    /// Each written slot's buffer size, by slot.
    sizes: Vec<u64>,
    commands: Vec<Command>,
    /// Per command: the written slots whose last use it is (not outputs).
    frees: Vec<Vec<usize>>,
    /// Each input's element type (its length is in the core [`Trace`]).
    inputs: Vec<DType>,
    /// Each output's slot, element count and type.
    outputs: Vec<(usize, usize, DType)>,
}

impl Drop for GpuTrace {
    fn drop(&mut self) {
        let consts = std::mem::take(&mut self.consts);
        self.gpu.unpin(consts.into_iter().flatten());
    }
}

/// The slots a command touches.
fn touched(c: &Command) -> Vec<usize> {
    match c {
        Command::Dispatch { binds, .. } => binds.clone(),
        Command::Copy { src, dst, .. } => vec![*src, *dst],
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
    let sources = rec.slots.sources().to_vec();
    let consts = rec.slots.slots().map(|(b, s)| (s == Source::Constant).then(|| b.clone())).collect();
    let sizes = rec.slots.slots().map(|(b, _)| b.size()).collect();
    // Written memory is the pool's again (once its tensors let go of it).
    let written: Vec<wgpu::Buffer> = rec.slots.slots().filter(|(_, s)| *s == Source::Written).map(|(b, _)| b.clone()).collect();
    gpu.unpin(written);
    let out_ids: Vec<usize> = out_slots.iter().map(|o| o.0).collect();
    let frees = rec.slots.last_uses(rec.commands.iter().map(touched), &out_ids);
    let lens = rec.inputs.iter().map(|&(l, _)| l).collect();
    let launches = rec.commands.len();
    let inner = GpuTrace {
        gpu: gpu.clone(),
        sources,
        consts,
        sizes,
        commands: rec.commands,
        frees,
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
    // The written slots' buffers of this replay, taken from the pool at their first write.
    let mut live: Vec<Option<(wgpu::Buffer, u64)>> = vec![None; t.sources.len()];
    let ran = encode(gpu, t, &ins, &mut live);
    let missing = || Error::backend("trace_replay", gpu.backend_name(), "internal: an output slot without a buffer");
    let outs = ran.and_then(|()| {
        t.outputs
            .iter()
            .map(|&(slot, len, dtype)| -> Result<Storage> {
                Ok(match t.sources[slot] {
                    Source::Input(i) => inputs[i].clone(),
                    Source::Constant => Storage::new(GpuTensor::pinned(gpu, t.consts[slot].clone().ok_or_else(missing)?, len, dtype)),
                    Source::Written => {
                        let (b, size) = live[slot].take().ok_or_else(missing)?;
                        Storage::new(GpuTensor::pooled(gpu, b, size, len, dtype))
                    }
                })
            })
            .collect::<Result<Vec<_>>>()
    });
    // Whatever is still taken (after a failed encode) goes back.
    for (b, size) in live.into_iter().flatten() {
        gpu.release(Kind::Tensor, size, b);
    }
    outs
}

/// Encodes the commands of `t`, taking and giving back the written slots' buffers in `live`.
fn encode(gpu: &Rc<Gpu>, t: &GpuTrace, ins: &[&GpuTensor], live: &mut [Option<(wgpu::Buffer, u64)>]) -> Result<()> {
    for (k, c) in t.commands.iter().enumerate() {
        let slots = touched(c);
        for &s in &slots {
            if t.sources[s] == Source::Written && live[s].is_none() {
                live[s] = Some(gpu.alloc("trace_replay", Kind::Tensor, t.sizes[s])?);
            }
        }
        let buffer = |slot: usize| -> Result<&wgpu::Buffer> {
            let b = match t.sources[slot] {
                Source::Input(i) => Some(ins[i].buffer()),
                Source::Constant => t.consts[slot].as_ref(),
                Source::Written => live[slot].as_ref().map(|(b, _)| b),
            };
            b.ok_or_else(|| Error::backend("trace_replay", gpu.backend_name(), "internal: a slot without a buffer"))
        };
        match c {
            Command::Dispatch { label, kernel, pipeline, layout, params, grid, binds, status, cache } => {
                let slot = gpu.reserve_slot(params)?;
                let bound: Vec<&wgpu::Buffer> = binds.iter().map(|&b| buffer(b)).collect::<Result<_>>()?;
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
                if let Some(log) = gpu.launch_log.borrow_mut().as_mut() {
                    log.push(format!("{label:<12} {kernel:<28} grid {grid:?} (replayed)"));
                }
            }
            Command::Copy { src, src_off, dst, dst_off, bytes } => gpu.copy_at(buffer(*src)?, *src_off, buffer(*dst)?, *dst_off, *bytes),
        }
        for &s in &t.frees[k] {
            if let Some((b, size)) = live[s].take() {
                gpu.release(Kind::Tensor, size, b);
            }
        }
    }
    Ok(())
}
