//! The CPU backend's threads in the browser: a fork-join pool on Web Workers that share the
//! module's memory (a wasm32 build with `+atomics`), used by `crate::par` the way rayon's pool
//! is used natively.
//!
//! Why not rayon here: a rayon caller blocks until the pool has finished (`memory.atomic.wait`),
//! and browsers refuse to block the page's main thread (the instruction traps), which is where
//! the package runs. So the caller never blocks in this pool: it publishes one job (a closure
//! over chunk indices), takes chunks itself like every worker does, then spins until the
//! chunks the workers took are done. Workers sleep (`std::thread::park`, allowed off the main
//! thread) between jobs. Which thread runs a chunk never changes what the chunk computes, so
//! results are bit-identical to one thread for every kernel that splits its output this way.
//!
//! The JS loader starts `n - 1` workers; each instantiates the module on the shared memory and
//! calls `worker_loop`, which registers it and never returns. A nested call (a chunk that
//! splits again) or a second caller while a job runs simply runs on its own thread.
//!
//! Elsewhere (natively, or a wasm build without atomics) [`threads`] reports rayon's pool or 1.

/// How many threads the CPU kernels split work over: the caller plus the registered workers
/// in the browser, rayon's pool natively, 1 in a wasm build without threads.
pub fn threads() -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    return 1 + pool::registered();
    #[cfg(not(target_arch = "wasm32"))]
    return rayon::current_num_threads();
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    return 1;
}

/// True in a build whose CPU kernels can use more than one thread (native, or wasm with atomics).
pub const THREADED_BUILD: bool = cfg!(any(not(target_arch = "wasm32"), target_feature = "atomics"));

#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
pub use pool::{worker_chunks, worker_failed, worker_loop, MAX_WORKERS};

#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
pub(crate) use pool::run;

#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
mod pool {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::OnceLock;
    use std::thread::Thread;

    /// Workers beyond this many are not registered (their `worker_loop` returns).
    pub const MAX_WORKERS: usize = 63;

    type Task<'a> = &'a (dyn Fn(usize) + Sync);

    /// The published job: the closure (as a raw pointer to its `&dyn`) and its chunk count.
    /// Valid while `ACTIVE`; the caller does not return until no worker can still read it.
    static TASK: AtomicUsize = AtomicUsize::new(0);
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    /// The next chunk index to hand out, and how many chunks finished.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static DONE: AtomicUsize = AtomicUsize::new(0);
    /// A job is published; workers between waking and finishing are counted in `BUSY`.
    static ACTIVE: AtomicBool = AtomicBool::new(false);
    static BUSY: AtomicUsize = AtomicUsize::new(0);
    /// Bumped once per job: a worker that saw this value already sleeps.
    static EPOCH: AtomicUsize = AtomicUsize::new(0);
    /// Held by the one caller whose job is running (others and nested calls run inline).
    static LOCK: AtomicBool = AtomicBool::new(false);
    static WORKERS: [OnceLock<Thread>; MAX_WORKERS] = [const { OnceLock::new() }; MAX_WORKERS];
    static REGISTERED: AtomicUsize = AtomicUsize::new(0);
    /// Set by `worker_failed`: a worker trapped (its JS side saw `worker_loop` throw).
    static FAILED: AtomicBool = AtomicBool::new(false);
    static WORKER_CHUNKS: AtomicUsize = AtomicUsize::new(0);

    /// Called by a worker's JS when `worker_loop` trapped: the caller waiting for that
    /// worker's chunk panics instead of spinning forever.
    pub fn worker_failed() {
        FAILED.store(true, SeqCst);
    }

    pub(super) fn registered() -> usize {
        REGISTERED.load(SeqCst).min(MAX_WORKERS)
    }

    /// Runs `f(i)` for every `i < count`, on the caller and the workers; returns when all ran.
    pub(crate) fn run(count: usize, f: &(dyn Fn(usize) + Sync)) {
        let workers = registered();
        if workers == 0 || count < 2 || LOCK.compare_exchange(false, true, SeqCst, SeqCst).is_err() {
            (0..count).for_each(f);
            return;
        }
        let task: Task<'_> = f;
        TASK.store(&task as *const Task<'_> as usize, SeqCst);
        COUNT.store(count, SeqCst);
        NEXT.store(0, SeqCst);
        DONE.store(0, SeqCst);
        ACTIVE.store(true, SeqCst);
        EPOCH.fetch_add(1, SeqCst);
        for w in WORKERS.iter().take(workers.min(count - 1)) {
            if let Some(t) = w.get() {
                t.unpark();
            }
        }
        let _ = help(&task, count);
        // The caller may not block (the browser's main thread): it spins on the chunks that
        // workers are finishing, then on workers that may still look at the job.
        while DONE.load(SeqCst) < count {
            if FAILED.load(SeqCst) {
                // A chunk trapped on a worker (a bug): it will never finish, and the memory it
                // was writing is half-updated. Panic, so the page discards this instance.
                panic!("a CPU worker thread crashed while running a kernel");
            }
            std::hint::spin_loop();
        }
        ACTIVE.store(false, SeqCst);
        while BUSY.load(SeqCst) > 0 {
            std::hint::spin_loop();
        }
        LOCK.store(false, SeqCst);
    }

    /// Takes and runs chunks of the current job until none is left.
    fn help(task: &Task<'_>, count: usize) -> usize {
        let mut ran = 0;
        loop {
            let i = NEXT.fetch_add(1, SeqCst);
            if i >= count {
                return ran;
            }
            task(i);
            ran += 1;
            DONE.fetch_add(1, SeqCst);
        }
    }

    /// Chunks the workers (not the caller) have run since the module started: lets a test see
    /// that the work really was shared.
    pub fn worker_chunks() -> usize {
        WORKER_CHUNKS.load(SeqCst)
    }

    /// A worker's life: registers, then sleeps until a job is published and helps with it.
    /// Never returns once registered (the JS worker calls it last); returns at once when
    /// [`MAX_WORKERS`] are registered already.
    pub fn worker_loop() {
        let slot = REGISTERED.fetch_add(1, SeqCst);
        if slot >= MAX_WORKERS {
            return;
        }
        let _ = WORKERS[slot].set(std::thread::current());
        let mut seen = EPOCH.load(SeqCst);
        loop {
            let epoch = EPOCH.load(SeqCst);
            if epoch == seen {
                std::thread::park();
                continue;
            }
            seen = epoch;
            BUSY.fetch_add(1, SeqCst);
            if ACTIVE.load(SeqCst) {
                let count = COUNT.load(SeqCst);
                // SAFETY: TASK points at the caller's `&dyn Fn` while ACTIVE is set, and the
                // caller waits for BUSY to drop to zero after clearing ACTIVE before that
                // reference goes away; COUNT and TASK were stored before ACTIVE.
                let task = unsafe { &*(TASK.load(SeqCst) as *const Task<'_>) };
                WORKER_CHUNKS.fetch_add(help(task, count), SeqCst);
            }
            BUSY.fetch_sub(1, SeqCst);
        }
    }
}
