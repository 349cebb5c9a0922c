//! Targets as given (class indices, one-hot/probability rows, float targets), checked against
//! the model's output; checkpoints, device-loss recovery and stop-on-NaN in `fit`.

mod support;

use std::cell::Cell;
use std::ops::ControlFlow;
use std::rc::Rc;

use pixelgrad_core::{Backend, BackendKind, Device, Error, LocalFuture, Op, Result, Shape, Storage, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::checkpoint::Checkpoint;
use pixelgrad_nn::layers::{Activation, Linear};
use pixelgrad_nn::train::{
    auto_checkpoint_every, evaluate, fit, Callbacks, DeviceLost, FitOptions, NoCallbacks, Samples, StepLog, Stopped,
};
use pixelgrad_nn::{Init, Loss, Mode, Module, OptimizerKind, Sequential};

fn cpu() -> Device {
    Device::new(CpuBackend::new())
}

/// The seed article's network, `inputs -> hidden sigmoid -> outputs sigmoid`.
fn seed_net(dev: &Device, inputs: usize, hidden: usize, outputs: usize) -> Sequential {
    let mut init = Init::new(5);
    Sequential::new()
        .push(Linear::new(dev, inputs, hidden, &mut init).unwrap())
        .push(Activation::Sigmoid)
        .push(Linear::new(dev, hidden, outputs, &mut init).unwrap())
        .push(Activation::Sigmoid)
}

/// 48 inputs and 2 float targets per sample: a smooth function of the inputs in (0.1, 0.9).
fn regression(n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut x = Vec::with_capacity(n * 48);
    let mut y = Vec::with_capacity(n * 2);
    for i in 0..n {
        let row: Vec<f32> = (0..48).map(|j| ((i * 31 + j * 17) % 23) as f32 / 23.0).collect();
        let a: f32 = row[..24].iter().sum::<f32>() / 24.0;
        let b: f32 = row[24..].iter().step_by(3).sum::<f32>() / 8.0;
        y.push(0.1 + 0.8 * a);
        y.push(0.9 - 0.8 * b);
        x.extend(row);
    }
    (x, y)
}

fn host(m: &dyn Module) -> Vec<Vec<f32>> {
    pixelgrad_nn::io::named_tensors(m).iter().map(|(_, t)| t.to_vec().unwrap()).collect()
}

#[test]
fn float_targets_train_the_seed_network_as_raw_tensor_ops_do() {
    let dev = cpu();
    let n = 64;
    let (x, y) = regression(n);
    let (shape, tshape) = ([48usize], [2usize]);
    let samples = Samples::with_values(&x, &shape, &y, &tshape).unwrap();
    let model = seed_net(&dev, 48, 64, 2);
    // the same weights, trained by hand: the article's passes (forward, output error,
    // hidden error, updates) written with tensor ops, SGD at batch 1 in sample order
    let w: Vec<Tensor> = pixelgrad_nn::io::named_tensors(&model).into_iter().map(|(_, t)| t.detach()).collect();
    let (mut w1, mut b1, mut w2, mut b2) = (w[0].clone(), w[1].clone(), w[2].clone(), w[3].clone());
    let lr = 0.5f32;
    let mut raw_losses = Vec::new();
    for epoch in 0..3 {
        let mut sum = 0.0f64;
        for i in 0..n {
            let xi = Tensor::from_vec(&dev, &x[i * 48..(i + 1) * 48], [1, 48]).unwrap();
            let ti = Tensor::from_vec(&dev, &y[i * 2..(i + 1) * 2], [1, 2]).unwrap();
            let h = xi.matmul(&w1).unwrap().add(&b1).unwrap().sigmoid().unwrap();
            let o = h.matmul(&w2).unwrap().add(&b2).unwrap().sigmoid().unwrap();
            let diff = o.sub(&ti).unwrap();
            sum += diff.square().unwrap().mean_all().unwrap().item().unwrap() as f64;
            // d mean((o - t)^2) / d o = (o - t) for 2 outputs; through sigmoid: * o (1 - o)
            let d_out = diff.mul(&o.mul(&o.affine(-1.0, 1.0).unwrap()).unwrap()).unwrap();
            let d_hid = d_out.matmul_t(&w2, false, true).unwrap().mul(&h.mul(&h.affine(-1.0, 1.0).unwrap()).unwrap()).unwrap();
            w2 = w2.sub(&h.matmul_t(&d_out, true, false).unwrap().mul_scalar(lr).unwrap()).unwrap();
            b2 = b2.sub(&d_out.reshape([2]).unwrap().mul_scalar(lr).unwrap()).unwrap();
            w1 = w1.sub(&xi.matmul_t(&d_hid, true, false).unwrap().mul_scalar(lr).unwrap()).unwrap();
            b1 = b1.sub(&d_hid.reshape([64]).unwrap().mul_scalar(lr).unwrap()).unwrap();
        }
        raw_losses.push((sum / n as f64) as f32);
        let _ = epoch;
    }
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(lr);
    let opts = FitOptions { epochs: 3, batch_size: 1, shuffle: false, read_every: 16, ..Default::default() };
    let h = fit(&model, opt.as_mut(), Loss::Mse, &dev, samples, None, &opts, &mut NoCallbacks).unwrap();
    let fit_losses: Vec<f32> = h.epochs.iter().map(|e| e.train_loss).collect();
    for (a, b) in fit_losses.iter().zip(&raw_losses) {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-3), "fit {fit_losses:?} vs raw ops {raw_losses:?}");
    }
    assert!(fit_losses[2] < 0.5 * fit_losses[0], "the loss goes down: {fit_losses:?}");
    // a regression has no accuracy
    assert!(h.epochs.iter().all(|e| e.train_accuracy.is_none()) && h.steps.iter().all(|s| s.accuracy.is_none()));
    let (l, a) = evaluate(&model, Loss::Mse, &dev, samples, 16).unwrap();
    assert!(a.is_none() && l < fit_losses[0]);
    let raw_w = [w1, b1, w2, b2].iter().map(|t| t.to_vec().unwrap()).collect::<Vec<_>>();
    for (a, b) in host(&model).iter().zip(&raw_w) {
        assert!(a.iter().zip(b).all(|(p, q)| (p - q).abs() < 1e-5), "weights differ from the raw-op run");
    }
}

#[test]
fn probability_rows_and_bce_targets_report_their_accuracy() {
    let dev = cpu();
    let mut init = Init::new(1);
    let model = Sequential::new().push(Linear::new(&dev, 4, 3, &mut init).unwrap());
    let x: Vec<f32> = (0..6 * 4).map(|i| ((i * 7) % 5) as f32 / 5.0 - 0.4).collect();
    let labels = [0u32, 1, 2, 2, 1, 0];
    let one_hot: Vec<f32> = labels.iter().flat_map(|&c| (0..3).map(move |k| if k == c { 1.0 } else { 0.0 })).collect();
    let shape = [4usize];
    let cls = Samples::new(&x, &shape, &labels).unwrap();
    let oh = Samples::with_values(&x, &shape, &one_hot, &[3]).unwrap();
    // one-hot rows under cross-entropy: the same loss and accuracy as the class indices
    let (l1, a1) = evaluate(&model, Loss::CrossEntropy, &dev, cls, 4).unwrap();
    let (l2, a2) = evaluate(&model, Loss::CrossEntropy, &dev, oh, 4).unwrap();
    assert!((l1 - l2).abs() < 1e-6 && a1 == a2 && a1.is_some(), "{l1} {a1:?} vs {l2} {a2:?}");
    // BCE on 0/1 targets: binary accuracy per output (logit > 0 vs target > 0.5)
    let out = Tensor::from_vec(&dev, &[2.0, -1.0, 0.5, -3.0], [2, 2]).unwrap();
    let t = Tensor::from_vec(&dev, &[1.0, 0.0, 0.0, 0.0], [2, 2]).unwrap();
    let c = Loss::BceWithLogits.correct(&out, &t).unwrap().unwrap().item().unwrap();
    assert!((c - 1.5).abs() < 1e-6, "3 of 4 outputs agree: 1.5 samples' worth, got {c}");
    assert!(Loss::Mse.correct(&out, &t).unwrap().is_none());
}

#[test]
fn targets_that_do_not_fit_the_model_are_errors_naming_both_shapes() {
    let dev = cpu();
    let model = seed_net(&dev, 48, 8, 2);
    let (x, y) = regression(4);
    let shape = [48usize];
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
    let go = |s: Samples, loss: Loss, opt: &mut dyn pixelgrad_nn::Optimizer| {
        fit(&model, opt, loss, &dev, s, None, &FitOptions::default(), &mut NoCallbacks).unwrap_err().to_string()
    };
    let three: Vec<f32> = y.iter().chain(&y[..4]).copied().collect();
    let e = go(Samples::with_values(&x, &shape, &three, &[3]).unwrap(), Loss::Mse, opt.as_mut());
    assert!(e.contains("[N, 3]") && e.contains("[N, 2]") && e.contains("mse") && e.contains("cpu"), "{e}");
    let e = go(Samples::new(&x, &shape, &[0, 1, 2, 0]).unwrap(), Loss::Mse, opt.as_mut());
    assert!(e.contains("label 2 of sample 2") && e.contains("0..2"), "{e}");
    // one output and class indices: nothing to pick from
    let single = seed_net(&dev, 48, 8, 1);
    let e = fit(
        &single,
        opt.as_mut(),
        Loss::Mse,
        &dev,
        Samples::new(&x, &shape, &[0, 0, 0, 0]).unwrap(),
        None,
        &FitOptions::default(),
        &mut NoCallbacks,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("[N, 1]") && e.contains("class indices"), "{e}");
    // cross-entropy needs rows [N, C]; fine for a valid call afterwards
    let ok = fit(
        &model,
        opt.as_mut(),
        Loss::Mse,
        &dev,
        Samples::with_values(&x, &shape, &y, &[2]).unwrap(),
        None,
        &FitOptions::default(),
        &mut NoCallbacks,
    );
    assert!(ok.is_ok());
    assert!(Samples::with_values(&x, &shape, &y[..7], &[2]).is_err());
}

/// A CPU backend that reports the device lost from the `lose_at`-th step on, until replaced.
struct Flaky {
    inner: CpuBackend,
    steps: Rc<Cell<usize>>,
    lose_at: usize,
    /// Every call fails once lost (as on a real lost device), or only steps do (so a test can
    /// still read the model).
    all_fail: bool,
}

impl Flaky {
    fn check(&self) -> Result<()> {
        if self.all_fail {
            self.lost()
        } else {
            Ok(())
        }
    }
    fn lost(&self) -> Result<()> {
        if self.lose_at > 0 && self.steps.get() >= self.lose_at {
            return Err(Error::DeviceLost { backend: "flaky".into(), reason: "simulated".into() });
        }
        Ok(())
    }
}

impl Backend for Flaky {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn name(&self) -> String {
        format!("flaky (lost at step {})", self.lose_at)
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.check()?;
        self.inner.upload(data)
    }
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        self.check()?;
        self.inner.execute(op, inputs, shapes, out)
    }
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.check()?;
        self.inner.read(storage, len)
    }
    fn read_async<'a>(&'a self, storage: &'a Storage, len: usize) -> LocalFuture<'a, Result<Vec<f32>>> {
        self.inner.read_async(storage, len)
    }
    fn begin_step(&self, _key: u64) -> Result<()> {
        self.steps.set(self.steps.get() + 1);
        self.lost()
    }
}

struct Recover {
    lost: Vec<DeviceLost>,
    restored: Option<Checkpoint>,
    model_weights_after: Option<Vec<Vec<f32>>>,
    steps: Vec<usize>,
}

impl Callbacks for Recover {
    fn on_step(&mut self, log: &StepLog) -> ControlFlow<()> {
        self.steps.push(log.step);
        ControlFlow::Continue(())
    }
    fn on_device_lost(&mut self, info: &DeviceLost) -> Option<Device> {
        self.lost.push(info.clone());
        Some(cpu())
    }
}

fn digits() -> (Vec<f32>, Vec<u32>, Vec<f32>, Vec<u32>) {
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    (s.train.images().to_vec(), s.train.labels().to_vec(), s.test.images().to_vec(), s.test.labels().to_vec())
}

use support::mlp;

#[test]
fn a_lost_device_is_recovered_from_the_last_checkpoint_with_the_same_result() {
    let (x, y, tx, ty) = digits();
    let shape = [64usize];
    let train = Samples::new(&x, &shape, &y).unwrap();
    let test = Samples::new(&tx, &shape, &ty).unwrap();
    // 1437 samples / 32 = 45 steps per epoch; 600 steps
    let opts = FitOptions { epochs: 14, batch_size: 32, seed: 3, checkpoint_every: Some(50), read_every: 10, ..Default::default() };
    let run = |lose_at: usize| {
        let dev = Device::new(Flaky { inner: CpuBackend::new(), steps: Rc::new(Cell::new(0)), lose_at, all_fail: true });
        let model = mlp(&dev);
        let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
        let mut cb = Recover { lost: vec![], restored: None, model_weights_after: None, steps: vec![] };
        let h = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, Some(test), &opts, &mut cb).unwrap();
        cb.restored = h.last_checkpoint.clone();
        cb.model_weights_after = Some(host(&model));
        (h, cb)
    };
    let (clean, _) = run(0);
    let (h, cb) = run(300);
    assert_eq!(cb.lost.len(), 1, "one loss reported");
    assert_eq!(h.recoveries.len(), 1);
    let info = &cb.lost[0];
    assert_eq!(info.checkpoint_step, 250, "{info:?}");
    assert!(info.step >= 299 && info.step - info.checkpoint_step <= 50, "at most checkpoint_every steps redone: {info:?}");
    assert!(info.backend.contains("flaky") && info.reason.contains("simulated"));
    // redone steps are logged again; the run ends as the uninterrupted one did, exactly
    assert_eq!(h.steps.iter().map(|s| s.step).collect::<Vec<_>>(), clean.steps.iter().map(|s| s.step).collect::<Vec<_>>());
    assert_eq!(h.epochs, clean.epochs);
    let last = h.epochs.last().unwrap().test_accuracy.unwrap();
    assert!(last > 0.9, "test accuracy {last}");
    assert_eq!(cb.model_weights_after, run(0).1.model_weights_after, "weights equal the uninterrupted run's");
    assert!(cb.steps.iter().filter(|&&s| s > 250 && s <= 300).count() >= 2, "the redone steps were logged twice");
}

#[test]
fn the_weights_after_recovery_equal_the_checkpoint() {
    let (x, y, _, _) = digits();
    let shape = [64usize];
    let train = Samples::new(&x, &shape, &y).unwrap();
    let opts = FitOptions { epochs: 2, batch_size: 32, seed: 3, checkpoint_every: Some(40), read_every: 1, ..Default::default() };
    // the checkpoint an uninterrupted run has at step 40
    let reference = {
        let dev = cpu();
        let model = mlp(&dev);
        let mut opt = OptimizerKind::parse("momentum").unwrap().build(0.05);
        struct Until40;
        impl Callbacks for Until40 {
            fn on_step(&mut self, l: &StepLog) -> ControlFlow<()> {
                if l.step == 40 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }
        }
        fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, None, &opts, &mut Until40).unwrap();
        Checkpoint::take(&model, opt.as_ref(), 40).unwrap()
    };
    // lost at step 60; the device given for recovery is lost at once too, so the model is left
    // exactly as the recovery restored it
    struct Once(usize);
    impl Callbacks for Once {
        fn on_device_lost(&mut self, _: &DeviceLost) -> Option<Device> {
            self.0 += 1;
            (self.0 == 1)
                .then(|| Device::new(Flaky { inner: CpuBackend::new(), steps: Rc::new(Cell::new(0)), lose_at: 1, all_fail: false }))
        }
    }
    let dev = Device::new(Flaky { inner: CpuBackend::new(), steps: Rc::new(Cell::new(0)), lose_at: 60, all_fail: true });
    let model = mlp(&dev);
    let mut opt = OptimizerKind::parse("momentum").unwrap().build(0.05);
    let mut cb = Once(0);
    let e = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, train, None, &opts, &mut cb).unwrap_err();
    assert!(matches!(e, Error::DeviceLost { .. }) && cb.0 == 2, "{e}");
    let restored = Checkpoint::take(&model, opt.as_ref(), 40).unwrap();
    assert_eq!(restored, reference, "parameters, momentum and counters after recovery equal the step-40 checkpoint");
}

#[test]
fn a_non_finite_loss_stops_fit_with_the_last_good_weights() {
    let dev = cpu();
    let (x, y) = regression(64);
    let shape = [48usize];
    let samples = Samples::with_values(&x, &shape, &y, &[2]).unwrap();
    let mut init = Init::new(2);
    // a linear model with a learning rate that makes the weights blow up within a few steps
    let model = Sequential::new().push(Linear::new(&dev, 48, 2, &mut init).unwrap());
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(20.0);
    let opts = FitOptions { epochs: 50, batch_size: 4, read_every: 2, checkpoint_every: Some(4), shuffle: false, ..Default::default() };
    let h = fit(&model, opt.as_mut(), Loss::Mse, &dev, samples, None, &opts, &mut NoCallbacks).unwrap();
    let Some(Stopped::NonFiniteLoss { first_step, step, loss, restored_step }) = h.stopped.clone() else {
        panic!("no stop: {:?}", h.steps)
    };
    assert!(!loss.is_finite() && first_step <= step && restored_step < step && restored_step % 4 == 0, "{:?}", h.stopped);
    let w = host(&model);
    assert!(w.iter().flatten().all(|v| v.is_finite()), "the weights are the last good ones");
    let ck = h.last_checkpoint.unwrap();
    assert_eq!(ck.step, restored_step);
    assert_eq!(ck.weights.iter().map(|t| t.values.clone()).collect::<Vec<_>>(), w);
    // off: it trains on into NaN
    let model2 = Sequential::new().push(Linear::new(&dev, 48, 2, &mut Init::new(2)).unwrap());
    let off = FitOptions { stop_on_nan: false, epochs: 3, ..opts };
    let h2 = fit(&model2, opt.as_mut(), Loss::Mse, &dev, samples, None, &off, &mut NoCallbacks).unwrap();
    assert!(h2.stopped.is_none() && !h2.epochs.last().unwrap().train_loss.is_finite());
}

#[test]
fn automatic_checkpoint_interval_follows_the_measured_costs() {
    assert_eq!(auto_checkpoint_every(0.001, 0.001), 50);
    assert_eq!(auto_checkpoint_every(1e-6, 1.0), 20, "cheap checkpoints: the shortest interval");
    assert_eq!(auto_checkpoint_every(10.0, 1e-4), 2000, "capped");
    assert_eq!(auto_checkpoint_every(f64::NAN, 1.0), 20);
    // fit reports what it chose
    let (x, y, _, _) = digits();
    let shape = [64usize];
    let dev = cpu();
    let model = mlp(&dev);
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let h = fit(
        &model,
        opt.as_mut(),
        Loss::CrossEntropy,
        &dev,
        Samples::new(&x, &shape, &y).unwrap(),
        None,
        &FitOptions::default(),
        &mut NoCallbacks,
    )
    .unwrap();
    assert!((20..=2000).contains(&h.checkpoint_every) && h.checkpoints >= 2, "{} every {}", h.checkpoints, h.checkpoint_every);
    let _ = Mode::Eval;
}

/// Found by the safetensors fuzz target: sizes from a model file's header multiplied without
/// overflow checks (a panic) or built matrices without bound (an allocation of any size).
#[test]
fn model_file_sizes_that_overflow_or_exceed_the_weight_limit_are_errors() {
    use pixelgrad_nn::presets::ModelSpec;
    let dev = cpu();
    for meta in [
        "mlp;4294967296,4294967296,4294967296;10",
        "mlp;1,100000,100000;10",
        "seed-mlp;1,8,6;18446744073709551615",
        "cnn;1,4096,4096;100000",
        "cnn;18446744073709551615,4,4;2",
    ] {
        let spec = ModelSpec::from_meta(meta).unwrap();
        let e = spec.build(&dev, 0).err().unwrap_or_else(|| panic!("{meta} built")).to_string();
        assert!(e.contains("more than") && e.contains("values"), "{meta}: {e}");
    }
    // the presets at their usual sizes still build
    for meta in ["mlp;1,28,28;10", "cnn;3,32,32;10", "seed-mlp;1,8,6;2"] {
        assert!(ModelSpec::from_meta(meta).unwrap().build(&dev, 0).is_ok(), "{meta}");
    }
}
