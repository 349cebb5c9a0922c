//! Run-time checks of data-dependent validity (gather / scatter_add index values). A shader
//! cannot fail, so such an op also renders a 1-element flag (non-zero = failed) and queues it
//! here. The next readback of *any* tensor first folds the queued flags into one (max draws on
//! 1-element textures), reads that single value and turns a failure into a typed error naming
//! the op — so a bad index surfaces at the next read of its result or of anything computed
//! after it (the loss, typically), like an asynchronous GPU error. The queue is folded early
//! when it grows, so it stays small however long nothing is read.
//!
//! This file is the queue and how checks merge; the max draws that fold them are the
//! elementwise op's, run from above the ops (`submit.rs`), so the queue never calls up.

use std::cell::RefCell;

use pixelgrad_core::Result;

use crate::device::GlDevice;
use crate::texture::GlTensor;

/// Queued checks are folded into one when this many are pending.
pub(crate) const MAX_PENDING: usize = 16;

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
    pub(crate) fn verdict(&self, flag: f32, dev: &GlDevice) -> Result<()> {
        if flag != 0.0 {
            return Err(dev.err(self.op, self.msg.clone()));
        }
        Ok(())
    }
}

/// The checks rendered but not read yet.
#[derive(Default)]
pub(crate) struct Checks {
    queue: RefCell<Vec<Check>>,
}

impl Checks {
    /// Queues a check; returns how many are queued now.
    pub fn push(&self, c: Check) -> usize {
        let mut q = self.queue.borrow_mut();
        q.push(c);
        q.len()
    }

    /// How many checks are queued.
    pub fn len(&self) -> usize {
        self.queue.borrow().len()
    }

    /// Takes every queued check and merges them into one (`None` if none is queued); `max`
    /// draws the larger of two 1-element flags (the caller's elementwise op).
    pub fn merge(&self, mut max: impl FnMut(&'static str, &GlTensor, &GlTensor) -> Result<GlTensor>) -> Result<Option<Check>> {
        let list = std::mem::take(&mut *self.queue.borrow_mut());
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
            flag = max(op, &flag, &c.flag)?;
        }
        // One distinct line: every folded check had first's op and message.
        let msg = if msgs.len() == 1 { first.msg } else { format!("one of these checks failed since the last read: {}", msgs.join("; ")) };
        Ok(Some(Check { flag, op, msg, parts: msgs }))
    }
}
