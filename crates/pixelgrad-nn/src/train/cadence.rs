//! When a training loop reads its sums back and takes a checkpoint, and how the automatic
//! checkpoint interval is chosen: the decisions a loop makes after each step, in one place for
//! the native [`super::Run`] and the browser package's `fit` (through `pixelgrad-web`).

use super::options::{auto_checkpoint_every, CHECKPOINT_EVERY_MIN};

/// What is due after a step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Due {
    /// Read loss and accuracy back now.
    pub read: bool,
    /// Take a checkpoint now (after the read).
    pub checkpoint: bool,
    /// The step was the run's last (`max_steps`).
    pub at_max: bool,
}

/// The checkpoint interval (given, or measured from the first interval's costs) and the read
/// interval of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Cadence {
    every: usize,
    auto: bool,
    read_every: usize,
    max_steps: Option<usize>,
    /// The step of the last checkpoint, or where the run started or went back to.
    last: usize,
    /// An automatic interval was chosen.
    chosen: bool,
}

impl Cadence {
    /// `checkpoint_every`: `Some(0)` never, `Some(n)` every `n` steps, `None` every
    /// [`CHECKPOINT_EVERY_MIN`] steps until the first checkpoint has measured the costs (see
    /// [`Cadence::checkpointed`]). `read_every` is at least 1.
    pub fn new(checkpoint_every: Option<usize>, read_every: usize, max_steps: Option<usize>) -> Cadence {
        Cadence {
            every: checkpoint_every.unwrap_or(CHECKPOINT_EVERY_MIN),
            auto: checkpoint_every.is_none(),
            read_every: read_every.max(1),
            max_steps,
            last: 0,
            chosen: false,
        }
    }

    /// The checkpoint interval now (0: no checkpoints).
    pub fn every(&self) -> usize {
        self.every
    }

    /// Whether checkpoints are taken at all.
    pub fn checkpoints(&self) -> bool {
        self.every > 0
    }

    /// What is due after `step` steps (1-based), with `since_read` steps not yet read back and
    /// `epoch_end` when the step was the epoch's last batch: a checkpoint every `every` steps
    /// and at `max_steps`; a read every `read_every` steps, at an epoch's end and before a
    /// checkpoint.
    pub fn after_step(&self, step: usize, since_read: usize, epoch_end: bool) -> Due {
        let at_max = self.max_steps == Some(step);
        let checkpoint = self.every > 0 && (step.is_multiple_of(self.every) || at_max);
        Due { read: since_read >= self.read_every || epoch_end || checkpoint, checkpoint, at_max }
    }

    /// Training starts, or goes on, at `step` (a resumed run, the checkpoint a device loss went
    /// back to): the time to the next checkpoint is that of the steps from here.
    pub fn start_at(&mut self, step: usize) {
        self.last = step;
    }

    /// A checkpoint was taken after `step` steps, in `checkpoint_seconds`, the steps since the
    /// last one (or the start) having taken `interval_seconds` (either `None` where time is not
    /// measured). The first measured interval of an automatic cadence chooses the interval
    /// ([`auto_checkpoint_every`]), once. Returns the interval from now on.
    pub fn checkpointed(&mut self, step: usize, checkpoint_seconds: Option<f64>, interval_seconds: Option<f64>) -> usize {
        let steps = step.saturating_sub(self.last);
        self.last = step;
        if self.auto && !self.chosen && steps > 0 {
            if let (Some(c), Some(t)) = (checkpoint_seconds, interval_seconds) {
                self.every = auto_checkpoint_every(c, t / steps as f64);
                self.chosen = true;
            }
        }
        self.every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_checkpoints_fall_on_their_intervals_and_max_steps() {
        let c = Cadence::new(Some(9), 4, Some(100));
        assert_eq!(c.after_step(3, 3, false), Due::default());
        assert_eq!(c.after_step(4, 4, false), Due { read: true, ..Due::default() });
        assert_eq!(c.after_step(18, 1, false), Due { read: true, checkpoint: true, at_max: false });
        assert_eq!(c.after_step(19, 1, true), Due { read: true, ..Due::default() });
        assert_eq!(c.after_step(100, 1, false), Due { read: true, checkpoint: true, at_max: true });
        let none = Cadence::new(Some(0), 4, None);
        assert!(!none.checkpoints() && !none.after_step(20, 1, false).checkpoint);
    }

    #[test]
    fn an_automatic_interval_is_chosen_once_from_the_first_measured_costs() {
        let mut c = Cadence::new(None, 10, None);
        assert_eq!(c.every(), CHECKPOINT_EVERY_MIN);
        // not measured (wasm without a clock): the minimum stays
        assert_eq!(c.checkpointed(20, None, Some(0.2)), 20);
        let mut c = Cadence::new(None, 10, None);
        // a checkpoint of 10 ms against 20 steps of 5 ms: 2 % of the time allows one every 100
        let every = c.checkpointed(20, Some(0.01), Some(0.1));
        assert_eq!(every, auto_checkpoint_every(0.01, 0.1 / 20.0));
        assert!((100..=101).contains(&every), "{every}");
        assert_eq!(c.checkpointed(every, Some(1.0), Some(0.0001)), every, "chosen once");
        // a resumed run measures the steps from where it went on
        let mut resumed = Cadence::new(None, 10, None);
        resumed.start_at(537);
        assert_eq!(resumed.checkpointed(540, Some(0.01), Some(0.015)), auto_checkpoint_every(0.01, 0.015 / 3.0));
        let mut given = Cadence::new(Some(7), 10, None);
        assert_eq!(given.checkpointed(7, Some(1.0), Some(0.01)), 7, "a given interval is kept");
    }
}
