//! The training loop as a state machine (`train::Run`): `fit` is a loop over its events, and
//! a fixed seed gives the same numbers, bit for bit, as the loop before it.

mod support;

use std::ops::ControlFlow;

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::train::{fit, Callbacks, Event, FitOptions, History, Parts, ResumePoint, Run, RunState, Samples, StepLog, Stopped};
use pixelgrad_nn::{Loss, OptimizerKind, Schedule};

use support::mlp;

/// Counts what the callbacks see.
#[derive(Default)]
struct Seen {
    steps: Vec<usize>,
    checkpoints: Vec<usize>,
}
impl Callbacks for Seen {
    fn on_step(&mut self, log: &StepLog) -> ControlFlow<()> {
        self.steps.push(log.step);
        ControlFlow::Continue(())
    }
    fn on_checkpoint(&mut self, p: &ResumePoint<'_>) -> pixelgrad_core::Result<()> {
        self.checkpoints.push(p.position.step);
        Ok(())
    }
}

/// Digits, 3 epochs of a 64-32-10 MLP with Adam, shuffled with seed 7, checkpoints every 9
/// steps, a read every 4, a test set, stopped at step 100.
fn digits_run() -> (History, Seen, Vec<u32>) {
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let dev = Device::new(CpuBackend::new());
    let model = mlp(&dev);
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let shape = [64usize];
    let train = Samples::new(s.train.images(), &shape, s.train.labels()).unwrap();
    let test = Samples::new(s.test.images(), &shape, s.test.labels()).unwrap();
    let opts = FitOptions {
        epochs: 3,
        batch_size: 40,
        read_every: 4,
        seed: 7,
        checkpoint_every: Some(9),
        max_steps: Some(100),
        schedule: Schedule::Cosine { total: 100, min_lr: 0.001 },
        ..Default::default()
    };
    let mut seen = Seen::default();
    let h = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, Some(test), &opts, &mut seen).unwrap();
    let weights = pixelgrad_nn::io::named_tensors(&model).iter().flat_map(|(_, t)| t.to_vec().unwrap()).map(f32::to_bits).collect();
    (h, seen, weights)
}

/// FNV-1a over the bits, to keep the golden numbers short.
fn digest(bits: impl IntoIterator<Item = u32>) -> u64 {
    bits.into_iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

#[test]
fn fit_gives_the_numbers_of_the_loop_before_the_state_machine() {
    let (h, seen, weights) = digits_run();
    let losses: Vec<u32> = h.steps.iter().map(|s| s.loss.to_bits()).collect();
    let epochs: Vec<u32> = h
        .epochs
        .iter()
        .flat_map(|e| [e.train_loss.to_bits(), e.test_loss.unwrap().to_bits(), e.test_accuracy.unwrap().to_bits()])
        .collect();
    let steps: Vec<usize> = h.steps.iter().map(|s| s.step).collect();
    // Recorded from the loop before the state machine (e9f18b2), on the CPU backend.
    // A read every 4 steps, at each checkpoint (every 9) and at the end of an epoch (36 steps).
    let mut logged = Vec::new();
    for epoch_start in [0usize, 36, 72] {
        let end = (epoch_start + 36).min(100);
        let mut since = 0;
        for s in epoch_start + 1..=end {
            since += 1;
            if since == 4 || s % 9 == 0 || s == end {
                logged.push(s);
                since = 0;
            }
        }
    }
    assert_eq!(steps, logged);
    assert_eq!(seen.steps, steps, "on_step sees every log");
    assert_eq!(seen.checkpoints, vec![9, 18, 27, 36, 45, 54, 63, 72, 81, 90, 99, 100]);
    assert_eq!(h.checkpoints, 13, "the one before the first step, and one every 9 steps and at max_steps");
    assert_eq!(h.stopped, Some(Stopped::MaxSteps { step: 100 }));
    assert_eq!(h.epochs.len(), 2);
    assert_eq!(digest(losses), 0x84cd775ee15dad98, "step losses");
    assert_eq!(digest(epochs), 0x53ddb94faef8e646, "epoch losses and accuracies");
    assert_eq!(digest(weights), 0xf081468c1cdcd9d9, "final weights");
}

#[test]
fn a_run_yields_each_step_log_checkpoint_and_epoch_and_stops_when_asked() {
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let dev = Device::new(CpuBackend::new());
    let model = mlp(&dev);
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
    let shape = [64usize];
    let train = Samples::new(s.train.images(), &shape, s.train.labels()).unwrap();
    let opts = FitOptions { epochs: 2, batch_size: 100, read_every: 5, checkpoint_every: Some(6), ..Default::default() };
    let mut run = Run::new(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, None, &opts).unwrap();
    assert!(run.recover(dev.clone()).is_err(), "no loss to recover from is an error, not a panic");
    let (mut steps, mut logs, mut checkpoints, mut epochs) = (0, 0, Vec::new(), 0);
    loop {
        match run.next().unwrap() {
            Event::Step { step, epoch, .. } => {
                steps += 1;
                assert_eq!(step, steps);
                assert_eq!(epoch, (step - 1) / 15, "15 batches of 100 in 1,437 samples");
            }
            Event::Log(_) => logs += 1,
            Event::Checkpoint { step, every, .. } => {
                assert_eq!(every, 6);
                assert_eq!(run.resume_point().unwrap().position.step, step);
                checkpoints.push(step);
            }
            Event::Epoch(e) => {
                epochs += 1;
                assert!(e.train_loss.is_finite() && e.test_loss.is_none());
                // stop after the first epoch: no step of the second
                run.stop();
            }
            Event::Done(why) => {
                assert_eq!(why, None);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((steps, epochs), (15, 1));
    assert_eq!(checkpoints, vec![6, 12]);
    // reads at 5, 6 (checkpoint), 11, 12 (checkpoint), 15 (end of the epoch)
    assert_eq!(logs, 5);
    assert_eq!(run.next().unwrap(), Event::Done(None), "a finished run stays finished");
    let h = run.into_history().unwrap();
    assert_eq!(h.steps.len(), 5);
    assert_eq!(h.last_checkpoint.unwrap().step, 12);
}

/// The events of a run with its options, the checkpoint seconds left out (timing).
fn untimed(ev: Event) -> Event {
    match ev {
        Event::Checkpoint { step, every, .. } => Event::Checkpoint { step, seconds: None, every },
        other => other,
    }
}

/// The digits run of [`digits_run`] driven as a browser drives it: a [`RunState`] that leaves
/// every read to its driver ([`Event::Read`]), here read and fed back at once, with the read
/// at `lose_at` (the n-th read, if any) failing with a device loss, recovered from on a new
/// device. Returns the events (without the reads) and the final weights.
fn deferred_digits_run(lose_at: Option<usize>) -> (Vec<Event>, Vec<u32>, usize) {
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let dev = Device::new(CpuBackend::new());
    let model = mlp(&dev);
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let shape = [64usize];
    let train = Samples::new(s.train.images(), &shape, s.train.labels()).unwrap();
    let test = Samples::new(s.test.images(), &shape, s.test.labels()).unwrap();
    let opts = FitOptions {
        epochs: 3,
        batch_size: 40,
        read_every: 4,
        seed: 7,
        checkpoint_every: Some(9),
        max_steps: Some(100),
        schedule: Schedule::Cosine { total: 100, min_lr: 0.001 },
        ..Default::default()
    };
    let mut parts = Parts { model: &model, opt: opt.as_mut(), train, test: Some(test) };
    let mut run = RunState::new(&mut parts, Loss::CrossEntropy, &dev, &opts).unwrap();
    run.defer_reads();
    let (mut events, mut reads) = (Vec::new(), 0);
    loop {
        // a page paces steps only: it asks before each call whether a step comes next
        let steps_next = run.steps_next();
        let ev = run.next(&mut parts).unwrap();
        assert_eq!(matches!(ev, Event::Step { .. }), steps_next, "steps_next said {steps_next} before {ev:?}");
        match ev {
            Event::Read(_) => {
                reads += 1;
                if Some(reads) == lose_at {
                    let lost = pixelgrad_core::Error::DeviceLost { backend: "cpu".into(), reason: "simulated".into() };
                    run.fail(lost);
                    continue;
                }
                let values = run.pending().expect("a read is out").to_vec().unwrap();
                run.feed(&mut parts, values).unwrap();
            }
            Event::DeviceLost(info) => {
                events.push(Event::DeviceLost(info));
                run.recover(&mut parts, Device::new(CpuBackend::new())).unwrap();
            }
            Event::Done(why) => {
                events.push(Event::Done(why));
                break;
            }
            other => events.push(untimed(other)),
        }
    }
    assert!(run.pending().is_none() && run.feed(&mut parts, vec![]).is_err(), "nothing out after the run: feeding is an error");
    let h = run.take_history(&mut parts).unwrap();
    // the failed read's checkpoint (if it was one) is not counted; none of the redone steps'
    // checkpoints had been taken before
    assert_eq!(h.checkpoints, 13);
    let weights = pixelgrad_nn::io::named_tensors(&model).iter().flat_map(|(_, t)| t.to_vec().unwrap()).map(f32::to_bits).collect();
    (events, weights, reads)
}

#[test]
fn deferred_reads_give_the_steps_logs_checkpoints_and_weights_of_blocking_ones() {
    let (h, seen, weights) = digits_run();
    // the same run with blocking reads, its events recorded
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let dev = Device::new(CpuBackend::new());
    let model = mlp(&dev);
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let shape = [64usize];
    let train = Samples::new(s.train.images(), &shape, s.train.labels()).unwrap();
    let test = Samples::new(s.test.images(), &shape, s.test.labels()).unwrap();
    let opts = FitOptions {
        epochs: 3,
        batch_size: 40,
        read_every: 4,
        seed: 7,
        checkpoint_every: Some(9),
        max_steps: Some(100),
        schedule: Schedule::Cosine { total: 100, min_lr: 0.001 },
        ..Default::default()
    };
    let mut run = Run::new(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, Some(test), &opts).unwrap();
    let mut blocking = Vec::new();
    loop {
        let ev = run.next().unwrap();
        assert!(!matches!(ev, Event::Read(_)), "a Run reads itself");
        let done = matches!(ev, Event::Done(_));
        blocking.push(untimed(ev));
        if done {
            break;
        }
    }
    drop(run);

    let (deferred, dweights, reads) = deferred_digits_run(None);
    assert_eq!(deferred, blocking, "same events in the same order");
    assert_eq!(dweights, weights, "same final weights, bit for bit");
    let logs: Vec<usize> = deferred.iter().filter_map(|e| if let Event::Log(l) = e { Some(l.step) } else { None }).collect();
    assert_eq!(logs, seen.steps);
    // reads: every log, 13 checkpoints, 2 evaluations
    assert_eq!(reads, h.steps.len() + 13 + 2);

    // a read that fails with a device loss (the 10th: a checkpoint or sums after step 18) is
    // recovered from as a failed blocking read is: back to the last checkpoint, the steps since
    // redone, and the run ends with the weights of the uninterrupted one
    let (lossy, lweights, _) = deferred_digits_run(Some(10));
    let lost = lossy.iter().find_map(|e| if let Event::DeviceLost(i) = e { Some(i.clone()) } else { None }).expect("a loss");
    assert!(lost.checkpoint_step <= lost.step && lost.checkpoint_step % 9 == 0, "{lost:?}");
    assert!(lossy.iter().any(|e| matches!(e, Event::Recovered(_))));
    assert_eq!(lweights, weights, "recovered: the same final weights");
    let last_log = |evs: &[Event]| evs.iter().rev().find_map(|e| if let Event::Log(l) = e { Some(l.clone()) } else { None });
    assert_eq!(last_log(&lossy), last_log(&blocking));
}
