//! The one place that decides whether a kernel runs on threads. Kernels describe their work as
//! independent chunks of the output; natively (and only for the fast f32 path) large outputs
//! are split across rayon's pool, everywhere else (wasm, the f64 reference) it is a plain loop.

use crate::element::Element;

/// Outputs smaller than this many elements are not worth waking threads for.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const PAR_MIN: usize = 1 << 15;

/// Calls `f(i, chunk)` for the `i`-th run of `chunk` consecutive elements of `out` (the last
/// run may be shorter). Chunks are disjoint, so `f` may run on several threads at once.
pub(crate) fn for_chunks<T: Element>(out: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let chunk = chunk.max(1);
    #[cfg(not(target_arch = "wasm32"))]
    if T::FAST && out.len() >= PAR_MIN && threaded() {
        use rayon::prelude::*;
        // Group tiny chunks so each rayon task still covers a few thousand elements.
        let min_len = (4096 / chunk).max(1);
        out.par_chunks_mut(chunk).with_min_len(min_len).enumerate().for_each(|(i, c)| f(i, c));
        return;
    }
    for (i, c) in out.chunks_mut(chunk).enumerate() {
        f(i, c);
    }
}

/// True when rayon's pool has more than one thread (`RAYON_NUM_THREADS=1` or a one-core
/// machine runs every kernel inline: handing work to a single worker only adds wake-ups).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn threaded() -> bool {
    rayon::current_num_threads() > 1
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
