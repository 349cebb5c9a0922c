//! Submitting queued work: folding the queued run-time checks (`checks.rs`) with max draws,
//! `glFlush`, and the step boundaries around the plans (`plan.rs`). It sits above the ops
//! because a fold is an elementwise op, so nothing below calls up into it.

use std::rc::Rc;

use pixelgrad_core::{BinaryOp, Result, Shape};

use crate::checks::{Check, MAX_PENDING};
use crate::context::Shared;

/// Takes every queued check and folds them into one (`None` if none is queued).
pub(crate) fn merge_checks(sh: &Rc<Shared>) -> Result<Option<Check>> {
    let one = Shape::from([1]);
    let max = BinaryOp::Max.launch()?;
    // The larger of two 1-element flags.
    sh.checks.merge(|op, a, b| crate::ops::elementwise::map(sh, op, "max", &max, &[a, b], &[&one, &one], &one))
}

/// Folds two or more queued checks into one and queues it again. `Backend::flush` does this
/// every step, so a training loop that never reads keeps one texture queued and issues the
/// same fold draws every step (instead of growing the queue to [`MAX_PENDING`] and folding
/// every few steps).
pub(crate) fn fold_checks(sh: &Rc<Shared>) -> Result<()> {
    if sh.checks.len() < 2 {
        return Ok(());
    }
    if let Some(m) = merge_checks(sh)? {
        sh.checks.push(m);
    }
    Ok(())
}

/// Folds the queue when it is long (after an op that queued a check).
pub(crate) fn fold_if_long(sh: &Rc<Shared>) -> Result<()> {
    if sh.checks.len() >= MAX_PENDING {
        fold_checks(sh)?;
    }
    Ok(())
}

/// Blocking: reads the folded flag of every queued check.
pub(crate) fn verify_checks(sh: &Rc<Shared>) -> Result<()> {
    match merge_checks(sh)? {
        Some(c) => {
            let v = sh.read_raw(&c.flag, 1)?;
            c.verdict(v[0], sh)
        }
        None => Ok(()),
    }
}

/// Submits queued work: folds the pending index checks into one (so the queue and the draws
/// per step stay fixed while nothing is read), then `glFlush`.
pub(crate) fn flush(sh: &Rc<Shared>) -> Result<()> {
    sh.current()?;
    fold_checks(sh)?;
    sh.submit()
}

/// See [`pixelgrad_core::Backend::begin_step`].
pub(crate) fn begin_step(sh: &Rc<Shared>, key: u64) -> Result<()> {
    if sh.steps.is_open() {
        return Err(sh.err("begin_step", "a step is already open (steps do not nest)"));
    }
    // Eager work queued before the step is folded and flushed first, so the step starts
    // clean: its draws are only its own. With nothing queued there is nothing to submit, so a
    // replayed step is one submission (its `end_step`).
    sh.current()?;
    fold_checks(sh)?;
    if sh.unflushed() {
        flush(sh)?;
    }
    sh.steps.begin(&sh.dev, key);
    sh.forget_gl_state();
    Ok(())
}

/// See [`pixelgrad_core::Backend::end_step`]: folds the step's checks (as planned draws) and
/// flushes, then leaves step mode even if that failed.
pub(crate) fn end_step(sh: &Rc<Shared>) -> Result<()> {
    if !sh.steps.is_open() {
        return Err(sh.err("end_step", "no step is open"));
    }
    let flushed = flush(sh);
    sh.steps.end();
    // Textures released while the plans were being updated may have left the pool over its
    // budget.
    sh.enforce_budget();
    // Outside a step, other code may use the context between our calls.
    sh.forget_gl_state();
    flushed
}
