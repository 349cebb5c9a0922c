//! The one place that decides whether a kernel runs on threads. Kernels describe their work as
//! independent chunks of the output; for the fast f32 path large outputs are split across
//! threads — rayon's pool natively, pixelgrad's own pool on Web Workers in a wasm build with
//! atomics (`crate::threads`: the browser's main thread may not block, so rayon cannot run
//! there) — and everywhere else (a wasm build without atomics, the f64 reference) it is a
//! plain loop. Which thread computes a chunk never changes its result.

use crate::element::Element;

/// Outputs smaller than this many elements are not worth waking threads for.
#[cfg(any(not(target_arch = "wasm32"), target_feature = "atomics"))]
pub(crate) const PAR_MIN: usize = 1 << 15;

/// Calls `f(i, chunk)` for the `i`-th run of `chunk` consecutive elements of `out` (the last
/// run may be shorter). Chunks are disjoint, so `f` may run on several threads at once.
pub(crate) fn for_chunks<T: Element>(out: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let chunk = chunk.max(1);
    #[cfg(any(not(target_arch = "wasm32"), target_feature = "atomics"))]
    if T::FAST && out.len() >= PAR_MIN && threaded() {
        // Group tiny chunks so each task still covers a few thousand elements.
        let min_len = (4096 / chunk).max(1);
        #[cfg(not(target_arch = "wasm32"))]
        {
            use rayon::prelude::*;
            out.par_chunks_mut(chunk).with_min_len(min_len).enumerate().for_each(|(i, c)| f(i, c));
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = try_chunks(out, chunk * min_len, |g, run| {
                for (j, c) in run.chunks_mut(chunk).enumerate() {
                    f(g * min_len + j, c);
                }
                Ok(())
            });
        }
        return;
    }
    for (i, c) in out.chunks_mut(chunk).enumerate() {
        f(i, c);
    }
}

/// Calls `f(i, chunk)` for every run of `chunk` elements of `out` on the available threads
/// (callers decide when the work is large enough) and returns the first error by chunk order.
#[cfg(any(not(target_arch = "wasm32"), target_feature = "atomics"))]
pub(crate) fn try_chunks<T: Send>(
    out: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) -> pixelgrad_core::Result<()> + Sync + Send,
) -> pixelgrad_core::Result<()> {
    let chunk = chunk.max(1);
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        out.par_chunks_mut(chunk).enumerate().try_for_each(|(i, c)| f(i, c))
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    {
        /// The output's base pointer, shared by the threads that fill disjoint runs of it.
        struct Base<T>(*mut T);
        // SAFETY: every thread writes only its own disjoint run (chunk `i` below), and the
        // caller's `&mut` borrow outlives `threads::run`, which returns when all runs are done.
        unsafe impl<T: Send> Sync for Base<T> {}
        let (len, base) = (out.len(), Base(out.as_mut_ptr()));
        let count = len.div_ceil(chunk);
        // One slot per chunk, each locked by one thread only (never contended: the main
        // thread must not block).
        let errors: Vec<std::sync::Mutex<Option<pixelgrad_core::Error>>> = (0..count).map(|_| Default::default()).collect();
        crate::threads::run(count, &|i| {
            let start = i * chunk;
            let end = (start + chunk).min(len);
            let base = &base;
            // SAFETY: `start..end` lies inside `out` and no other chunk index covers it.
            let c = unsafe { std::slice::from_raw_parts_mut(base.0.add(start), end - start) };
            if let Err(e) = f(i, c) {
                if let Ok(mut slot) = errors[i].lock() {
                    *slot = Some(e);
                }
            }
        });
        for slot in errors {
            if let Some(e) = slot.into_inner().ok().flatten() {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// True when the CPU kernels have more than one thread to split over (`RAYON_NUM_THREADS=1`,
/// a one-core machine or a page that is not cross-origin isolated runs every kernel inline:
/// handing work to a single worker only adds wake-ups).
#[cfg(any(not(target_arch = "wasm32"), target_feature = "atomics"))]
pub(crate) fn threaded() -> bool {
    crate::threads::threads() > 1
}

/// Chunk length for flat elementwise work: big enough to amortise the per-chunk call.
pub(crate) const FLAT_CHUNK: usize = 4096;

/// Offset of the row-major flat index `idx` over `dims` in a buffer with element `strides`.
#[inline]
pub(crate) fn offset_of(mut idx: usize, dims: &[usize], strides: &[usize]) -> usize {
    let mut off = 0;
    for a in (0..dims.len()).rev() {
        let d = dims[a];
        if d == 0 {
            return 0;
        }
        off += (idx % d) * strides[a];
        idx /= d;
    }
    off
}
