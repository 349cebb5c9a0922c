//! Resuming a training run from a checkpoint file: a run stopped (by `max_steps`, as a crash
//! would stop it between two checkpoints) and resumed from its last saved checkpoint ends with
//! the same weights, bit for bit, and the same logs as a run never interrupted, on the CPU, in
//! f32 and in mixed precision, with dropout (a layer counter) and Adam (moments and step count)
//! in the state. A saved run that does not fit the options is refused.

use std::collections::HashMap;

use pixelgrad_core::{Device, Result};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::layers::{Activation, Dropout, Linear};
use pixelgrad_nn::resume;
use pixelgrad_nn::train::{fit, Callbacks, FitOptions, History, ResumePoint, Samples, Stopped};
use pixelgrad_nn::{Init, Loss, Module, OptimizerKind, Precision, ScaleOptions, Sequential};

fn net(dev: &Device) -> Sequential {
    let mut init = Init::new(11);
    Sequential::new()
        .push(Linear::new(dev, 64, 32, &mut init).unwrap())
        .push(Activation::Relu)
        .push(Dropout::new(0.1, 4).unwrap())
        .push(Linear::new(dev, 32, 10, &mut init).unwrap())
}

fn host(m: &dyn Module) -> Vec<Vec<u32>> {
    pixelgrad_nn::io::named_tensors(m).iter().map(|(_, t)| t.to_vec().unwrap().iter().map(|v| v.to_bits()).collect()).collect()
}

/// Keeps the bytes of every checkpoint file, as `pixelgrad train` writes them.
#[derive(Default)]
struct Saver {
    saved: Vec<(usize, Vec<u8>)>,
}

impl Saver {
    fn steps(&self) -> Vec<usize> {
        self.saved.iter().map(|(s, _)| *s).collect()
    }
    fn at(&self, step: usize) -> &[u8] {
        &self.saved.iter().find(|(s, _)| *s == step).unwrap().1
    }
    fn last(&self) -> &[u8] {
        &self.saved.last().unwrap().1
    }
}

impl Callbacks for Saver {
    fn on_checkpoint(&mut self, point: &ResumePoint<'_>) -> Result<()> {
        let bytes = resume::to_bytes(point, &HashMap::from([("who".to_string(), "test".to_string())]))?;
        self.saved.push((point.position.step, bytes));
        Ok(())
    }
}

fn run(opts: &FitOptions, cb: &mut Saver) -> (History, Vec<Vec<u32>>) {
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let shape = [64usize];
    let train = Samples::new(s.train.images(), &shape, s.train.labels()).unwrap();
    let test = Samples::new(s.test.images(), &shape, s.test.labels()).unwrap();
    let dev = Device::new(CpuBackend::new());
    let model = net(&dev);
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let h = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, Some(test), opts, cb).unwrap();
    (h, host(&model))
}

fn stop_and_resume(precision: Precision) {
    // 1437 samples / 32 = 45 steps per epoch, 3 epochs = 135 steps; checkpoints every 20
    // a loss scale that changes within the run (doubling after 16 good steps in a row)
    let loss_scale = ScaleOptions { initial: 256.0, growth_interval: 16 };
    let opts = FitOptions {
        epochs: 3,
        batch_size: 32,
        seed: 9,
        read_every: 7,
        checkpoint_every: Some(20),
        precision,
        loss_scale,
        ..Default::default()
    };
    let (straight, want) = run(&opts, &mut Saver::default());
    assert_eq!(straight.epochs.len(), 3);
    // stopped at step 97: checkpoints at 20, 40, 60, 80 and where it stopped
    let mut first = Saver::default();
    let (stopped, _) = run(&FitOptions { max_steps: Some(97), ..opts.clone() }, &mut first);
    assert_eq!(stopped.stopped, Some(Stopped::MaxSteps { step: 97 }));
    assert_eq!(first.steps(), [20, 40, 60, 80, 97]);
    // a crash at step 97 would have left step 80's file; both resume to the same end
    for step in [80, 97] {
        let (r, meta) = resume::from_bytes(first.at(step)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(meta.get("who").map(String::as_str), Some("test"), "other metadata rides along");
        assert_eq!((r.position.epoch, r.position.step), (step / 45, step));
        assert_eq!(r.loss_scale.is_some(), precision == Precision::Mixed);
        let mut second = Saver::default();
        let (resumed, got) = run(&FitOptions { resume: Some(r), ..opts.clone() }, &mut second);
        assert!(got == want, "{precision:?}: resumed from step {step}, the weights differ from the uninterrupted run's");
        assert_eq!(second.steps(), [100, 120], "checkpoints go on at the same interval");
        assert_eq!(resumed.stopped, None);
        assert_eq!(resumed.epochs.len(), 3);
        if step == 80 {
            assert_eq!(resumed.steps, straight.steps, "a resume from a regular checkpoint logs what the straight run logged");
            assert_eq!(resumed.epochs, straight.epochs);
        }
    }
    // resume from a checkpoint at an epoch's end (step 45: the evaluation is still to do)
    let mut at_45 = Saver::default();
    run(&FitOptions { max_steps: Some(45), ..opts.clone() }, &mut at_45);
    let (r, _) = resume::from_bytes(at_45.last()).unwrap();
    assert_eq!((r.position.epoch, r.position.batch), (0, 45));
    let (resumed, got) = run(&FitOptions { resume: Some(r), ..opts.clone() }, &mut Saver::default());
    assert!(got == want, "{precision:?}: resumed at an epoch's end, the weights differ");
    assert_eq!(resumed.epochs.len(), 3, "the epoch whose steps were done is evaluated once, after the resume");
    assert_eq!(resumed.epochs[0].test_accuracy, straight.epochs[0].test_accuracy);
}

#[test]
fn a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one() {
    stop_and_resume(Precision::F32);
}

#[test]
fn a_resumed_mixed_precision_run_keeps_its_loss_scale() {
    stop_and_resume(Precision::Mixed);
}

#[test]
fn a_saved_run_that_does_not_fit_is_refused() {
    let opts = FitOptions { epochs: 2, batch_size: 32, seed: 9, checkpoint_every: Some(20), max_steps: Some(40), ..Default::default() };
    let mut saver = Saver::default();
    run(&opts, &mut saver);
    let bytes = saver.last().to_vec();
    let (r, _) = resume::from_bytes(&bytes).unwrap();
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let shape = [64usize];
    let train = Samples::new(s.train.images(), &shape, s.train.labels()).unwrap();
    let dev = Device::new(CpuBackend::new());
    let model = net(&dev);
    let try_fit = |o: FitOptions| {
        let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
        fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, None, &o, &mut Saver::default()).unwrap_err().to_string()
    };
    let base = FitOptions { max_steps: None, resume: Some(r.clone()), ..opts.clone() };
    // a batch size that makes fewer batches than the saved position
    let e = try_fit(FitOptions { batch_size: 1024, ..base.clone() });
    assert!(e.contains("resume") && e.contains("batch"), "{e}");
    // f32 run resumed as mixed
    let e = try_fit(FitOptions { precision: Precision::Mixed, ..base.clone() });
    assert!(e.contains("f32"), "{e}");
    // another optimizer
    let mut sgd = OptimizerKind::parse("sgd").unwrap().build(0.01);
    assert!(fit(&model, sgd.as_mut(), Loss::CrossEntropy, &dev, train, None, &base, &mut Saver::default()).is_err());
    // not a resumable file: a plain checkpoint and garbage
    let ck = pixelgrad_nn::checkpoint::Checkpoint::take(&model, OptimizerKind::parse("adam").unwrap().build(0.1).as_ref(), 0).unwrap();
    let e = resume::from_bytes(&ck.to_bytes(&HashMap::new()).unwrap()).unwrap_err().to_string();
    assert!(e.contains("not of a resumable run"), "{e}");
    assert!(resume::from_bytes(b"junk").is_err());
    assert!(resume::from_bytes(&bytes[..bytes.len() / 2]).is_err());
    // save and load through a file
    let path = std::env::temp_dir().join(format!("pixelgrad-resume-{}.safetensors", std::process::id()));
    resume::save(&r.point(), &path, &HashMap::new()).unwrap();
    assert_eq!(resume::load(&path).unwrap().0, r);
    std::fs::remove_file(&path).unwrap();
    assert!(resume::load(&path).unwrap_err().to_string().contains(&path.display().to_string()));
}
