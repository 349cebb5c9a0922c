//! Realising pending values: running the computation behind a [`Storage`] on its backend
//! (an elementwise result as its matmul's epilogue where it can be one), once.

use super::device::{Epilogue, FusionDevice, ReduceAt, ReduceInput};
use super::epilogue::epilogue_of;
use super::storage::{PendingValue, ReduceSource, Storage, Work};
use crate::kernel::fuse::Pending;
use crate::{Error, Result};

/// The backend memory behind `s`, computing it first when it is pending (a fused chain, a
/// deferred matmul or reduction): how every op that is not fused reads its inputs.
pub fn realise<'a, D: FusionDevice>(d: &D, op: &'static str, s: &'a Storage) -> Result<&'a D::Memory> {
    match s {
        Storage::Memory(_) => d.memory(op, s),
        Storage::Pending(v) => d.memory(op, force(d, v)?),
    }
}

/// The memory of `v`, computing it the first time. A failed run leaves it pending (the next
/// call tries again).
pub fn force<'a, D: FusionDevice>(d: &D, v: &'a PendingValue) -> Result<&'a Storage> {
    if let Some(s) = v.done() {
        return Ok(s);
    }
    let memory = match v.work() {
        Work::Map(cell) => {
            let p = cell.borrow_mut().take().ok_or_else(|| Error::invalid("fuse", "a pending computation was taken while it ran"))?;
            match run(d, &p) {
                Ok(s) => s,
                Err(e) => {
                    *cell.borrow_mut() = Some(p);
                    return Err(e);
                }
            }
        }
        Work::Matmul(mm) => {
            let a = realise(d, "matmul", &mm.inputs[0])?;
            let b = realise(d, "matmul", &mm.inputs[1])?;
            Storage::new(d.run_matmul(mm, a, b, v.shape(), None)?.0)
        }
        Work::Reduce(r) => {
            let at = ReduceAt::Axis(r.axis, &r.shape);
            let (m, _) = match &r.source {
                ReduceSource::Prologue(p) => d.run_reduce(r.op, fused(d, p)?, at, v.shape(), None)?,
                ReduceSource::Plain(s) => d.run_reduce(r.op, ReduceInput::Memory(realise(d, "reduce", s)?), at, v.shape(), None)?,
            };
            Storage::new(m)
        }
    };
    Ok(v.set_done(memory))
}

/// `p` as the input of a reduction that reads it as its prologue.
pub fn fused<'a, D: FusionDevice>(d: &D, p: &'a Pending<Storage>) -> Result<ReduceInput<'a, D::Memory>> {
    let leaves = p.leaves.iter().map(|(s, _)| realise(d, "reduce", s)).collect::<Result<Vec<_>>>()?;
    Ok(ReduceInput::Fused { p, leaves })
}

/// Runs one elementwise computation into fresh memory (as a matmul's epilogue when it can).
pub fn run<D: FusionDevice>(d: &D, p: &Pending<Storage>) -> Result<Storage> {
    if p.shape.numel() > 0 {
        if let Some(s) = run_as_epilogue(d, p)? {
            return Ok(s);
        }
    }
    let ins = p.leaves.iter().map(|(s, _)| realise(d, "fused", s)).collect::<Result<Vec<_>>>()?;
    d.run_map(p, &ins)
}

/// Runs `p` as the epilogue of the pending matmul or reduction it reads ([`epilogue_of`]),
/// if that can take it on: `Some(result)` then (the matmul's or reduction's own result stored
/// too).
fn run_as_epilogue<D: FusionDevice>(d: &D, p: &Pending<Storage>) -> Result<Option<Storage>> {
    let Some(given) = epilogue_of(d, p) else { return Ok(None) };
    let Some(v) = p.leaves[given].0.as_pending() else { return Ok(None) };
    let out = v.shape();
    // A computation on a reshape of the result (a convolution's [N, O, OH, OW] view of its
    // [N, O, OH*OW] product) is read in the result's shape, when its other leaves follow the
    // reshape; the values are the same elements in the same flat order.
    let viewed;
    let p = if &p.shape == out {
        p
    } else {
        match p.viewed_as(out) {
            Some(w) => {
                viewed = w;
                &viewed
            }
            None => return Ok(None),
        }
    };
    if &p.leaves[given].1 != out {
        return Ok(None);
    }
    let others = |d: &D| -> Result<Epilogue<'_, D::Memory>> {
        let mut leaves = Vec::new();
        let mut shapes = Vec::new();
        for (j, (s, sh)) in p.leaves.iter().enumerate() {
            if j != given {
                leaves.push(realise(d, "fused", s)?);
                shapes.push(sh);
            }
        }
        Ok(Epilogue { p, given, leaves, shapes })
    };
    let (own, result) = if let Some(mm) = v.matmul() {
        if !d.takes_epilogue(mm, out, p, given) {
            return Ok(None);
        }
        let a = realise(d, "matmul", &mm.inputs[0])?;
        let b = realise(d, "matmul", &mm.inputs[1])?;
        d.run_matmul(mm, a, b, out, Some(&others(d)?))?
    } else if let Some(r) = v.reduce() {
        let ReduceSource::Plain(x) = &r.source else { return Ok(None) };
        let x = realise(d, "reduce", x)?;
        d.run_reduce(r.op, ReduceInput::Memory(x), ReduceAt::Axis(r.axis, &r.shape), out, Some(&others(d)?))?
    } else {
        return Ok(None);
    };
    v.set_done(Storage::new(own));
    Ok(result.map(Storage::new))
}
