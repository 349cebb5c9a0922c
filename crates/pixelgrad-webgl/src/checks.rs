//! Run-time checks of data-dependent validity (gather / scatter_add index values). A shader
//! cannot fail, so such an op also renders a 1-element flag (non-zero = failed) and queues it
//! here. The next readback of *any* tensor first folds the queued flags into one (max draws on
//! 1-element textures), reads that single value and turns a failure into a typed error naming
//! the op — so a bad index surfaces at the next read of its result or of anything computed
//! after it (the loss, typically), like an asynchronous GPU error. The queue is folded early
//! when it grows, so it stays small however long nothing is read.

use std::rc::Rc;

use pixelgrad_core::Result;

use crate::context::Shared;
use crate::launch::Pass;
use crate::texture::GlTensor;

/// Queued checks are folded into one when this many are pending.
const MAX_PENDING: usize = 16;

/// A rendered validity flag and what to report if it is set.
pub(crate) struct Check {
    pub flag: GlTensor,
    pub op: &'static str,
    pub msg: String,
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
            if let Some(m) = self.merge_pending()? {
                self.pending.borrow_mut().push(m);
            }
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
        let (op, mut msgs, mut flag) = (first.op, vec![format!("{}: {}", first.op, first.msg)], first.flag);
        for c in it {
            let m = format!("{}: {}", c.op, c.msg);
            if !msgs.contains(&m) {
                msgs.push(m);
            }
            // binary.max on two 1-element tensors.
            let pass = Pass::new(op, "binary", 4)
                .input("u_a", &flag)
                .input("u_b", &c.flag)
                .ranked("u_shape", &[1], 1)
                .ranked("u_sa", &[0], 0)
                .ranked("u_sb", &[0], 0);
            flag = self.run(pass, 1)?;
        }
        let msg = if msgs.len() == 1 {
            first.msg
        } else {
            format!("one of these checks failed since the last read: {}", msgs.join("; "))
        };
        Ok(Some(Check { flag, op, msg }))
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
