//! Recycled `f32` output buffers. An inference session or a training step allocates the same
//! output sizes run after run; without this, every kernel's output is a fresh allocation that
//! the allocator zeroes (`vec![0.0; n]`) only for the kernel to overwrite every element, and
//! every dropped tensor is a `free`. Here a dropped tensor's buffer (`CpuBuffer`'s `Drop`)
//! waits, by exact length, for the next output of that length.
//!
//! A recycled buffer holds old values: [`take`] is only for kernels that write every element
//! of their output (the callers say so). Per thread, at most [`MAX_BYTES`] wait. A buffer
//! that would go over empties the pool first: what waits then is from an earlier workload
//! (another model's sizes), and the current one refills it within a run.

use std::cell::RefCell;
use std::collections::HashMap;

/// Bytes of idle buffers kept per thread.
pub(crate) const MAX_BYTES: usize = 32 << 20;
/// Buffers shorter than this are freed as usual: the allocator's small bins serve them well.
const MIN_LEN: usize = 64;

#[derive(Default)]
struct Pool {
    by_len: HashMap<usize, Vec<Vec<f32>>>,
    bytes: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// A buffer of `n` values for a kernel that overwrites all of them: a recycled one (old
/// values) when one of that length waits, else a new zeroed one.
pub(crate) fn take(n: usize) -> Vec<f32> {
    if n >= MIN_LEN {
        let got = POOL
            .try_with(|p| {
                let mut p = p.try_borrow_mut().ok()?;
                let v = p.by_len.get_mut(&n)?.pop()?;
                p.bytes -= n * 4;
                Some(v)
            })
            .ok()
            .flatten();
        if let Some(v) = got {
            return v;
        }
    }
    vec![0.0; n]
}

/// Keeps `v` for a later [`take`] of its length, or frees it.
pub(crate) fn give(v: Vec<f32>) {
    let n = v.len();
    if n < MIN_LEN || v.capacity() != n {
        return;
    }
    if n * 4 > MAX_BYTES {
        return;
    }
    let _ = POOL.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            if p.bytes + n * 4 > MAX_BYTES {
                p.by_len.clear();
                p.bytes = 0;
            }
            p.bytes += n * 4;
            p.by_len.entry(n).or_default().push(v);
        }
    });
}

/// Idle bytes held by this thread's pool (tests).
#[cfg(test)]
pub(crate) fn idle_bytes() -> usize {
    POOL.with(|p| p.borrow().bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_by_length_and_the_pool_is_bounded() {
        let before = idle_bytes();
        let mut v = take(1000);
        assert_eq!(v.len(), 1000);
        v[3] = 7.0;
        let ptr = v.as_ptr();
        give(v);
        assert_eq!(idle_bytes(), before + 4000);
        assert_eq!(take(999).len(), 999, "another length is a new buffer");
        let again = take(1000);
        assert_eq!(again.as_ptr(), ptr, "the same length reuses the buffer");
        assert_eq!(idle_bytes(), before);
        // Short buffers and one larger than the bound are simply freed.
        give(vec![1.0; 10]);
        assert_eq!(idle_bytes(), before);
        give(vec![0.0; MAX_BYTES / 4 + 1]);
        assert_eq!(idle_bytes(), before);
        // A buffer that would go over the bound makes room: the old ones go.
        give(vec![0.0; 1000]);
        let big = MAX_BYTES / 4 - 500;
        give(vec![0.0; big]);
        assert_eq!(idle_bytes(), big * 4, "the earlier buffers were dropped");
        assert_eq!(take(big).len(), big);
        assert_eq!(idle_bytes(), 0);
    }
}
