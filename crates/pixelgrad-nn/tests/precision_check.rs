//! The precision check of `fit` without a GPU: a CPU device that reports reduced precision and
//! either computes exactly (the check must go on, with equal losses) or rounds every result to
//! half (Adam's second moments underflow as on a half-float WebGL device: the check must fall
//! back to the reference, with the numbers), and the cases where nothing is checked.
//! `pixelgrad-webgl`'s `tests/half_only.rs` runs the same on a real half-float driver.

mod support;

use pixelgrad_core::{Backend, BackendKind, Caps, Device, Op, Result, Shape, Storage};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::train::{fit, Callbacks, FitOptions, NoCallbacks, PrecisionAction, Run, Samples, PRECISION_CHECK_STEPS};
use pixelgrad_nn::{Loss, Module, OptimizerKind};

/// The CPU, reporting reduced precision; with `round`, every op's result rounded to half.
struct HalfCpu {
    inner: Device,
    round: bool,
    caps: Caps,
}

impl Backend for HalfCpu {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn name(&self) -> String {
        if self.round {
            "half-cpu".into()
        } else {
            "exact-cpu".into()
        }
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.inner.backend().upload(data)
    }
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let b = self.inner.backend();
        let r = b.execute(op, inputs, shapes, out)?;
        if !self.round {
            return Ok(r);
        }
        let v: Vec<f32> = b.read(&r, out.numel())?.into_iter().map(|x| half::f16::from_f32(x).to_f32()).collect();
        b.upload(&v)
    }
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.inner.backend().read(storage, len)
    }
    fn caps(&self) -> &Caps {
        &self.caps
    }
}

fn half_cpu(round: bool) -> Device {
    let why = if round { "every result rounded to half" } else { "nothing (a test)" };
    let caps = Caps { reduced_precision: Some(why.into()), ..Caps::F32_ONLY };
    Device::new(HalfCpu { inner: Device::new(CpuBackend::new()), round, caps })
}

struct CpuReference;
impl Callbacks for CpuReference {
    fn precision_reference(&mut self) -> Option<Device> {
        Some(Device::new(CpuBackend::new()))
    }
}

/// 2 epochs of the 64-32-10 MLP on 320 digits; the history and the device the parameters end on.
fn train(dev: &Device, opt: &str, cb: &mut dyn Callbacks) -> (pixelgrad_nn::train::History, String) {
    let split = pixelgrad_data::digits_split(0.2, 7).unwrap();
    // Flat rows: the support MLP takes [N, 64].
    let (shape, n, per) = ([64usize], 320, 64);
    let model = support::mlp(dev);
    let mut o = OptimizerKind::parse(opt).unwrap().build(if opt == "sgd" { 0.05 } else { 0.003 });
    let s = Samples::new(&split.train.images()[..n * per], &shape, &split.train.labels()[..n]).unwrap();
    let opts = FitOptions { epochs: 2, batch_size: 32, read_every: 5, seed: 5, checkpoint_every: Some(0), ..Default::default() };
    let h = fit(&model, o.as_mut(), Loss::CrossEntropy, dev, s, None, &opts, cb).unwrap();
    let mut name = String::new();
    model.visit_params(&mut |_, p| {
        if name.is_empty() {
            name = p.device().name();
        }
    });
    (h, name)
}

#[test]
fn an_exact_device_passes_the_check_and_trains_on() {
    let (h, on) = train(&half_cpu(false), "adam", &mut CpuReference);
    let c = h.precision_check.clone().expect("checked");
    assert_eq!(c.action, PrecisionAction::Continued, "{}", c.summary());
    assert_eq!(c.device_losses.len(), PRECISION_CHECK_STEPS);
    assert_eq!(c.device_losses, c.reference_losses);
    assert_eq!(c.max_rel_diff, 0.0);
    assert_eq!(on, "exact-cpu");
    // The checked steps are a probe: the run itself is the one an unchecked run makes.
    let (plain, _) = train(&half_cpu(false), "adam", &mut NoCallbacks);
    assert!(plain.precision_check.is_none());
    let losses = |h: &pixelgrad_nn::train::History| h.steps.iter().map(|s| s.loss).collect::<Vec<_>>();
    assert_eq!(losses(&h), losses(&plain));
}

#[test]
fn half_rounding_falls_back_for_adam_and_goes_on_for_sgd() {
    let (h, on) = train(&half_cpu(true), "adam", &mut CpuReference);
    let c = h.precision_check.expect("checked");
    eprintln!("{}", c.summary());
    assert_eq!(c.action, PrecisionAction::FellBack, "{}", c.summary());
    assert!(c.max_rel_diff > c.tolerance);
    assert_eq!(on, "cpu");
    assert!(c.summary().contains("training falls back to cpu"), "{}", c.summary());
    // The run on the reference trains: its last logged loss is below its first.
    assert!(h.steps.last().unwrap().loss < h.steps[0].loss, "{:?}", h.steps);

    let (h, on) = train(&half_cpu(true), "sgd", &mut CpuReference);
    let c = h.precision_check.expect("checked");
    eprintln!("{}", c.summary());
    assert_eq!(c.action, PrecisionAction::Continued, "{}", c.summary());
    assert_eq!(on, "half-cpu");
}

#[test]
fn nothing_is_checked_at_full_precision_or_without_a_reference_or_after_the_first_step() {
    let (h, _) = train(&Device::new(CpuBackend::new()), "adam", &mut CpuReference);
    assert!(h.precision_check.is_none());
    let (h, _) = train(&half_cpu(true), "adam", &mut NoCallbacks);
    assert!(h.precision_check.is_none());

    let dev = half_cpu(false);
    let split = pixelgrad_data::digits_split(0.2, 7).unwrap();
    let shape = [64usize];
    let model = support::mlp(&dev);
    let mut o = OptimizerKind::parse("sgd").unwrap().build(0.05);
    let s = Samples::new(split.train.images(), &shape, split.train.labels()).unwrap();
    let opts = FitOptions { checkpoint_every: Some(0), ..Default::default() };
    let mut run = Run::new(&model, o.as_mut(), Loss::CrossEntropy, &dev, s, None, &opts).unwrap();
    while run.position().step == 0 {
        run.next().unwrap();
    }
    let e = run.check_precision(&Device::new(CpuBackend::new())).unwrap_err();
    assert!(e.to_string().contains("before the first step"), "{e}");
}
