//! Deferring an op instead of running it: what the fusion layer does with an elementwise op,
//! a matmul or a reduction a backend hands it. Each returns the pending (or, where two
//! pending values merged into one launch, computed) result, or `None` when the op runs as
//! usual.

use super::device::{FusionDevice, ReduceAt, ReduceInput};
use super::epilogue::epilogue_of;
use super::inline;
use super::realise::{fused, realise};
use super::state::FusionState;
use super::storage::{MatmulWork, PendingValue, ReduceSource, ReduceWork, Storage, Work};
use crate::kernel::Launch;
use crate::op::{Op, ReduceOp};
use crate::shape::Shape;
use crate::Result;

/// Elements `s` holds, without computing it when it is pending.
pub fn len_of<D: FusionDevice>(d: &D, op: &'static str, s: &Storage) -> Result<usize> {
    match s.as_pending() {
        Some(v) => Ok(v.shape().numel()),
        None => Ok(d.len(realise(d, op, s)?)),
    }
}

fn check<D: FusionDevice>(d: &D, op: &Op, lens: &[usize], shapes: &[&Shape], out: &Shape) -> Result<()> {
    crate::check_execute(op, lens, shapes, out, &d.backend_name())
}

/// `launch` (the elementwise op `op`, named `name`) over `inputs`, returned pending: composed
/// with every pending input of this generation it can inline ([`inline::defer`]).
#[allow(clippy::too_many_arguments)]
pub fn defer_map<D: FusionDevice>(
    d: &D,
    state: &FusionState,
    op: &Op,
    launch: &Launch,
    name: &'static str,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Storage> {
    let lens = inputs.iter().map(|s| len_of(d, op.name(), s)).collect::<Result<Vec<_>>>()?;
    check(d, op, &lens, shapes, out)?;
    d.check_size(op.name(), out)?;
    let p = inline::defer(launch, name, inputs, shapes, out, state.generation(), |p| d.fits_map(p))?;
    if d.limits().leaves_in_memory {
        for (leaf, _) in &p.leaves {
            if leaf.as_pending().is_some_and(|v| !v.is_done()) {
                realise(d, op.name(), leaf)?;
            }
        }
    }
    let st = Storage::pending(PendingValue::map(p, state.generation()));
    state.remember(&st);
    Ok(st)
}

/// A matmul returned pending: it runs when its value is needed, or with the first pending
/// elementwise result of its shape computed from it as its epilogue. `None` for another op.
pub fn defer_matmul<D: FusionDevice>(
    d: &D,
    state: &FusionState,
    op: &Op,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Option<Storage>> {
    let Op::MatMul { trans_a, trans_b } = *op else { return Ok(None) };
    if !d.defers_matmul(out) || inputs.len() != 2 || shapes.len() != 2 {
        return Ok(None);
    }
    let lens = inputs.iter().map(|s| len_of(d, op.name(), s)).collect::<Result<Vec<_>>>()?;
    check(d, op, &lens, shapes, out)?;
    d.check_size(op.name(), out)?;
    let work = MatmulWork {
        trans_a,
        trans_b,
        inputs: [inputs[0].clone(), inputs[1].clone()],
        shapes: [shapes[0].clone(), shapes[1].clone()],
        product: out.clone(),
        sum_batch: false,
    };
    let st = Storage::pending(PendingValue::new(Work::Matmul(work), out.clone(), state.generation()));
    state.remember(&st);
    Ok(Some(st))
}

/// A reduction of a pending value, fused with it where it can be: `None` when the op is not
/// such a reduction (it runs as usual).
///
/// - A sum over the batch of a pending batched matmul is one matmul summing its batch (kept
///   pending where [`super::Limits::defer_summed_matmul`]).
/// - A sum of a pending sum over the other end of its input (`[A, B, C]` summed over `C`,
///   then over `A`: the gradient of a broadcast bias) runs as one launch with it.
/// - A reduction of a pending elementwise result of this generation reads the computation
///   itself (a prologue) instead of computing it first.
/// - Whether the reduction is returned pending is the backend's choice
///   ([`FusionDevice::defers_reduce`]); one deferred without a prologue has a pending
///   elementwise input computed now (as a matmul's epilogue, typically), which keeps the
///   order in which products meet their epilogues.
pub fn reduce<D: FusionDevice>(
    d: &D,
    state: &FusionState,
    op: &Op,
    inputs: &[&Storage],
    shapes: &[&Shape],
    out: &Shape,
) -> Result<Option<Storage>> {
    let Op::Reduce { op: r, axis } = *op else { return Ok(None) };
    let (Some(&input), Some(&shape)) = (inputs.first(), shapes.first()) else { return Ok(None) };
    let limits = d.limits();
    let pending = input.as_pending();
    if let Some(mm) = pending.and_then(|v| v.matmul()) {
        // Read as any shape whose first axis is the batch: a reshape keeps the flat order.
        let product = &mm.product;
        let batch = product.dims()[0];
        let batched = product.rank() == 3 && batch > 1 && shape.dims().first() == Some(&batch) && shape.numel() == product.numel();
        if r == ReduceOp::Sum && axis == 0 && !mm.sum_batch && batched {
            check(d, op, &[shape.numel()], shapes, out)?;
            d.check_size(op.name(), out)?;
            let summed = MatmulWork { sum_batch: true, ..mm.clone() };
            if limits.defer_summed_matmul {
                let st = Storage::pending(PendingValue::new(Work::Matmul(summed), out.clone(), state.generation()));
                state.remember(&st);
                return Ok(Some(st));
            }
            let a = realise(d, "matmul", &mm.inputs[0])?;
            let b = realise(d, "matmul", &mm.inputs[1])?;
            return Ok(Some(Storage::new(d.run_matmul(&summed, a, b, out, None)?.0)));
        }
    }
    if let Some(first) = pending.and_then(|v| v.reduce()) {
        if r == ReduceOp::Sum && first.op == ReduceOp::Sum {
            if let ReduceSource::Prologue(p) = &first.source {
                check(d, op, &[shape.numel()], shapes, out)?;
                if let Some(st) = merged(d, first, p, axis)? {
                    return Ok(Some(st));
                }
            }
        }
    }
    // The reduction walks its input in flat order, so the pending computation is read with
    // its own shape, whatever shape the reduction sees (a reshape keeps the flat order).
    let prologue = inline::current(input, state.generation())
        .filter(|p| {
            d.fits_prologue(p) && p.shape.numel() == shape.numel() && !(limits.prologue_yields_to_epilogue && epilogue_of(d, p).is_some())
        })
        .map(|p| p.clone());
    let deferred = d.defers_reduce(r, prologue.is_some());
    if deferred && prologue.is_none() && pending.is_some_and(|v| v.map_pending().is_some()) {
        realise(d, op.name(), input)?;
    }
    if prologue.is_none() && !deferred {
        return Ok(None);
    }
    let len = len_of(d, op.name(), input)?;
    check(d, op, &[len], shapes, out)?;
    d.check_size(op.name(), out)?;
    let source = match prologue {
        Some(p) => ReduceSource::Prologue(p),
        None => ReduceSource::Plain(input.clone()),
    };
    let work = ReduceWork { op: r, source, shape: shape.clone(), axis };
    if !deferred {
        let at = ReduceAt::Axis(axis, shape);
        let (m, _) = match &work.source {
            ReduceSource::Prologue(p) => d.run_reduce(r, fused(d, p)?, at, out, None)?,
            ReduceSource::Plain(s) => d.run_reduce(r, ReduceInput::Memory(realise(d, op.name(), s)?), at, out, None)?,
        };
        return Ok(Some(Storage::new(m)));
    }
    let st = Storage::pending(PendingValue::new(Work::Reduce(work), out.clone(), state.generation()));
    state.remember(&st);
    Ok(Some(st))
}

/// The sum over `axis` of the pending sum `first` (of the computation `p`) as one launch
/// with it, when the two summed axes are the two ends of the input (every axis outside them
/// of size 1): `None` otherwise, and `first` then runs on its own when read.
fn merged<D: FusionDevice>(d: &D, first: &ReduceWork, p: &crate::kernel::fuse::Pending<Storage>, axis: usize) -> Result<Option<Storage>> {
    let dims = first.shape.dims();
    let (lo, hi) = (axis.min(first.axis), axis.max(first.axis));
    if lo == hi || hi >= dims.len() || dims[..lo].iter().chain(&dims[hi + 1..]).any(|&e| e != 1) {
        return Ok(None);
    }
    let (reps, len) = (dims[lo], dims[hi]);
    let outputs: usize = dims[lo + 1..hi].iter().product();
    let mut od = dims.to_vec();
    od[lo] = 1;
    od[hi] = 1;
    let at = ReduceAt::OuterAndInner { reps, outputs, len };
    Ok(Some(Storage::new(d.run_reduce(ReduceOp::Sum, fused(d, p)?, at, &Shape(od), None)?.0)))
}
