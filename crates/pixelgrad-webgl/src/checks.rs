//! Run-time checks of data-dependent validity (gather / scatter_add index values). A shader
//! cannot fail, so such an op also renders a 1-element flag (non-zero = failed) and queues it
//! here. The next readback of *any* tensor first folds the queued flags into one (max draws on
//! 1-element textures), reads that single value and turns a failure into a typed error naming
//! the op — so a bad index surfaces at the next read of its result or of anything computed
//! after it (the loss, typically), like an asynchronous GPU error. The queue is folded early
//! when it grows, so it stays small however long nothing is read.
//!
//! Submitting queued work (`Shared::flush`: fold the queue, then `glFlush`) lives here too, since
//! a flush is where the queue is folded every step.

use std::rc::Rc;

use glow::HasContext;
use pixelgrad_core::{BinaryOp, Result, Shape};

use crate::context::Shared;
use crate::texture::GlTensor;

/// Queued checks are folded into one when this many are pending.
const MAX_PENDING: usize = 16;

/// A rendered validity flag and what to report if it is set.
pub(crate) struct Check {
    pub flag: GlTensor,
    pub op: &'static str,
    pub msg: String,
    /// For a folded check: the distinct "op: message" lines it covers (empty otherwise), kept
    /// apart so that folding a folded check again does not nest or grow its message.
    pub parts: Vec<String>,
}

impl Check {
    /// Turns the flag value into the check's outcome.
    pub(crate) fn verdict(&self, flag: f32, sh: &Shared) -> Result<()> {
        if flag != 0.0 {
            return Err(sh.err(self.op, self.msg.clone()));
        }
        Ok(())
    }
}

impl Shared {
    /// Queues a check, folding the queue when it is long.
    pub fn push_check(self: &Rc<Self>, c: Check) -> Result<()> {
        let n = {
            let mut p = self.pending.borrow_mut();
            p.push(c);
            p.len()
        };
        if n >= MAX_PENDING {
            self.fold_pending()?;
        }
        Ok(())
    }

    /// Submits queued work: folds the pending index checks into one (so the queue and the
    /// draws per step stay fixed while nothing is read), then `glFlush`.
    pub fn flush(self: &Rc<Self>) -> Result<()> {
        self.current()?;
        self.fold_pending()?;
        // SAFETY: glFlush on the current context.
        unsafe { self.gl.flush() };
        self.unflushed.set(false);
        self.count(|c| c.submissions += 1);
        Ok(())
    }

    /// Folds two or more queued checks into one and queues it again. `Backend::flush` does
    /// this every step, so a training loop that never reads keeps one texture queued and
    /// issues the same fold draws every step (instead of growing the queue to
    /// [`MAX_PENDING`] and folding every few steps).
    pub fn fold_pending(self: &Rc<Self>) -> Result<()> {
        if self.pending.borrow().len() < 2 {
            return Ok(());
        }
        if let Some(m) = self.merge_pending()? {
            self.pending.borrow_mut().push(m);
        }
        Ok(())
    }

    /// Takes every queued check and folds them into one (`None` if none is queued).
    pub fn merge_pending(self: &Rc<Self>) -> Result<Option<Check>> {
        let list = std::mem::take(&mut *self.pending.borrow_mut());
        let mut it = list.into_iter();
        let Some(first) = it.next() else {
            return Ok(None);
        };
        fn add_parts(msgs: &mut Vec<String>, c: &Check) {
            let own = [format!("{}: {}", c.op, c.msg)];
            let parts: &[String] = if c.parts.is_empty() { &own } else { &c.parts };
            for m in parts {
                if !msgs.contains(m) {
                    msgs.push(m.clone());
                }
            }
        }
        let mut msgs = Vec::new();
        add_parts(&mut msgs, &first);
        let (op, mut flag) = (first.op, first.flag);
        for c in it {
            add_parts(&mut msgs, &c);
            // The larger of the two 1-element flags.
            let one = Shape::from([1]);
            let max = BinaryOp::Max.launch()?;
            flag = crate::ops::elementwise::map(self, op, "max", &max, &[&flag, &c.flag], &[&one, &one], &one)?;
        }
        // One distinct line: every folded check had first's op and message.
        let msg = if msgs.len() == 1 { first.msg } else { format!("one of these checks failed since the last read: {}", msgs.join("; ")) };
        Ok(Some(Check { flag, op, msg, parts: msgs }))
    }

    /// Blocking: reads the folded flag of every queued check.
    pub fn verify_pending(self: &Rc<Self>) -> Result<()> {
        match self.merge_pending()? {
            Some(c) => {
                let v = self.read_raw(&c.flag, 1)?;
                c.verdict(v[0], self)
            }
            None => Ok(()),
        }
    }
}
