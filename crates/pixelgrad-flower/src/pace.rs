//! When a long local step (a training round in a page) gives the event loop a turn: by the
//! time that passed, not by a count of batches.
//!
//! In a page the node's heartbeats, fetches and the page itself run on the thread that trains;
//! they run only while training awaits. A batch count (read and yield every 10 batches) is a
//! time on a fast device and a minute on SwiftShader, where a WebGL tab's round took 127 s and
//! its heartbeats stopped until the SuperLink marked it offline. A GPU also runs queued work
//! after the host has moved on: the time shows up at the next read, not while the batches are
//! queued. [`Pacer`] therefore ends a slice when `slice` seconds passed since the last turn, and
//! after each turn sets how many batches the next slice may queue from how long this one took,
//! read included (halved down to one batch when a slice ran long, doubled up to `max_batches`
//! while slices are short). A slice then lasts about `slice` seconds plus at most one batch,
//! whatever the device's speed.

/// Decides, batch by batch, when to read (sync with the device) and yield.
pub struct Pacer<C: Fn() -> f64> {
    now: C,
    slice: f64,
    max_batches: usize,
    cap: usize,
    start: f64,
    batches: usize,
}

impl<C: Fn() -> f64> Pacer<C> {
    /// A pacer on the clock `now` (seconds): slices of about `slice` seconds and at most
    /// `max_batches` batches (at least 1). The first slice is one batch.
    pub fn new(now: C, slice: f64, max_batches: usize) -> Self {
        let start = now();
        Pacer {
            now,
            slice: if slice.is_finite() && slice > 0.0 {
                slice
            } else {
                DEFAULT_SLICE_S
            },
            max_batches: max_batches.max(1),
            cap: 1,
            start,
            batches: 0,
        }
    }

    /// One batch was queued; `true`: read and yield now, then call [`Pacer::turned`].
    pub fn batch_done(&mut self) -> bool {
        self.batches += 1;
        self.batches >= self.cap || (self.now)() - self.start >= self.slice
    }

    /// The caller read and yielded: the slice that ended sets the next one's batch cap.
    pub fn turned(&mut self) {
        let t = (self.now)();
        let took = t - self.start;
        if self.batches > 0 {
            if took > self.slice {
                let fit = (self.batches as f64 * self.slice / took).floor() as usize;
                self.cap = fit.clamp(1, self.max_batches);
            } else if took < self.slice / 2.0 {
                self.cap = (self.cap * 2).min(self.max_batches);
            }
        }
        self.start = t;
        self.batches = 0;
    }

    /// Batches the current slice may queue before a read.
    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// Seconds of local work between two turns of the event loop, when not set otherwise.
pub const DEFAULT_SLICE_S: f64 = 0.5;

/// The slice for a node sending heartbeats every `heartbeat_period` seconds: a quarter of it,
/// at most one second, so a heartbeat waits at most about that long for its turn.
pub fn slice_for(heartbeat_period: f64) -> f64 {
    if heartbeat_period.is_finite() && heartbeat_period > 0.0 {
        (heartbeat_period / 4.0).min(1.0)
    } else {
        DEFAULT_SLICE_S
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A device that queues batches at no host cost and runs them at the next read,
    /// `per_batch` seconds each (a GPU behind a command queue); returns the longest slice.
    fn longest_slice(per_batch: f64, host_per_batch: f64, batches: usize) -> (f64, usize) {
        let clock = Cell::new(1000.0);
        let mut p = Pacer::new(|| clock.get(), 0.5, 10);
        let (mut pending, mut last_turn, mut longest, mut turns) = (0usize, 1000.0, 0.0f64, 0);
        for _ in 0..batches {
            clock.set(clock.get() + host_per_batch);
            pending += 1;
            if p.batch_done() {
                clock.set(clock.get() + pending as f64 * per_batch); // the read waits for the GPU
                pending = 0;
                longest = longest.max(clock.get() - last_turn);
                last_turn = clock.get();
                turns += 1;
                p.turned();
            }
        }
        (longest, turns)
    }

    #[test]
    fn slow_deferred_batches_get_short_slices() {
        // SwiftShader-like: 2 s of queued work per batch, none on the host. A fixed cadence of
        // 10 batches held the thread for 20 s; here every slice is one batch.
        let (longest, turns) = longest_slice(2.0, 0.0, 60);
        assert!(longest <= 2.0 + 1e-9, "longest slice {longest} s");
        assert_eq!(turns, 60);
    }

    #[test]
    fn slow_host_batches_end_the_slice_by_time() {
        // the host itself blocks 0.3 s per batch (a full command buffer)
        let (longest, _) = longest_slice(0.0, 0.3, 100);
        assert!(longest <= 0.5 + 0.3 + 1e-9, "longest slice {longest} s");
    }

    #[test]
    fn fast_batches_grow_to_the_cap() {
        // 1 ms per batch: after a few doublings slices hold max_batches, reads are rare
        let (longest, turns) = longest_slice(0.001, 0.0, 200);
        assert!(longest < 0.5);
        assert!(turns <= 24, "{turns} reads for 200 batches");
    }

    #[test]
    fn mixed_speeds_adapt_both_ways() {
        let clock = Cell::new(0.0);
        let mut p = Pacer::new(|| clock.get(), 1.0, 16);
        for _ in 0..5 {
            while !p.batch_done() {}
            clock.set(clock.get() + 0.01);
            p.turned();
        }
        assert_eq!(p.cap(), 16);
        // a slice of 16 batches that took 8 s: the next one may queue 2
        for _ in 0..15 {
            assert!(!p.batch_done());
        }
        assert!(p.batch_done());
        clock.set(clock.get() + 8.0);
        p.turned();
        assert_eq!(p.cap(), 2);
    }

    #[test]
    fn slices_follow_the_heartbeat_period() {
        assert_eq!(slice_for(4.0), 1.0);
        assert_eq!(slice_for(0.4), 0.1);
        assert_eq!(slice_for(f64::NAN), DEFAULT_SLICE_S);
        assert_eq!(Pacer::new(|| 0.0, -1.0, 0).cap(), 1);
    }
}
