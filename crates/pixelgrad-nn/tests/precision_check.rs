//! The precision check of `fit` without a GPU: a CPU device that reports reduced precision and
//! either computes exactly (the check must go on, with equal losses), rounds every result to
//! half (as a half-float WebGL device: Adam's second moments underflowed there until the
//! optimizers kept `sqrt(v)` and compensated weights, `pixelgrad_nn::optim::half`; the check
//! must now go on for Adam and SGD) or keeps only 2 mantissa bits (nothing trains like the CPU:
//! the check must fall back to the reference, with the numbers), and the cases where nothing
//! is checked.
//! `pixelgrad-webgl`'s `tests/half_only.rs` runs the same on a real half-float driver.

mod support;

use pixelgrad_core::{Backend, BackendKind, Caps, Device, Op, Result, Shape, Storage};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::train::{fit, Callbacks, FitOptions, NoCallbacks, PrecisionAction, Run, Samples, PRECISION_CHECK_STEPS};
use pixelgrad_nn::{Loss, Module, OptimizerKind};

/// What [`HalfCpu`] does to every op's result.
#[derive(Clone, Copy, PartialEq)]
enum Rounding {
    Exact,
    /// To the nearest half (the `half` crate).
    Half,
    /// To 2 mantissa bits (nearest, ties away), as an 8-bit float would.
    Coarse,
}

/// The CPU, reporting reduced precision, with every op's result rounded as `round` says.
struct HalfCpu {
    inner: Device,
    round: Rounding,
    caps: Caps,
}

fn coarse(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let keep = 2;
    let drop = 23 - keep;
    f32::from_bits((x.to_bits() + (1 << (drop - 1))) & !((1u32 << drop) - 1))
}

impl Backend for HalfCpu {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn name(&self) -> String {
        match self.round {
            Rounding::Exact => "exact-cpu".into(),
            Rounding::Half => "half-cpu".into(),
            Rounding::Coarse => "coarse-cpu".into(),
        }
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.inner.backend().upload(data)
    }
    fn execute(&self, op: &Op, inputs: &[&Storage], shapes: &[&Shape], out: &Shape) -> Result<Storage> {
        let b = self.inner.backend();
        let r = b.execute(op, inputs, shapes, out)?;
        let f = match self.round {
            Rounding::Exact => return Ok(r),
            Rounding::Half => |x: f32| half::f16::from_f32(x).to_f32(),
            Rounding::Coarse => coarse,
        };
        let v: Vec<f32> = b.read(&r, out.numel())?.into_iter().map(f).collect();
        b.upload(&v)
    }
    fn read(&self, storage: &Storage, len: usize) -> Result<Vec<f32>> {
        self.inner.backend().read(storage, len)
    }
    fn caps(&self) -> &Caps {
        &self.caps
    }
}

fn half_cpu(round: Rounding) -> Device {
    let why = match round {
        Rounding::Exact => "nothing (a test)",
        Rounding::Half => "every result rounded to half",
        Rounding::Coarse => "every result rounded to 2 mantissa bits",
    };
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
    let (h, on) = train(&half_cpu(Rounding::Exact), "adam", &mut CpuReference);
    let c = h.precision_check.clone().expect("checked");
    assert_eq!(c.action, PrecisionAction::Continued, "{}", c.summary());
    assert_eq!(c.device_losses.len(), PRECISION_CHECK_STEPS);
    assert_eq!(c.device_losses, c.reference_losses);
    assert_eq!(c.max_rel_diff, 0.0);
    assert_eq!(on, "exact-cpu");
    // The checked steps are a probe: the run itself is the one an unchecked run makes.
    let (plain, _) = train(&half_cpu(Rounding::Exact), "adam", &mut NoCallbacks);
    assert!(plain.precision_check.is_none());
    let losses = |h: &pixelgrad_nn::train::History| h.steps.iter().map(|s| s.loss).collect::<Vec<_>>();
    assert_eq!(losses(&h), losses(&plain));
}

/// Half rounding: Adam and RMSprop (with `sqrt(v)` and compensated weights) and SGD all go
/// on, and their checked losses stay within 1 % of the CPU's. Before `optim::half`, Adam fell
/// back here.
#[test]
fn half_rounding_goes_on_for_adam_rmsprop_and_sgd() {
    for opt in ["adam", "rmsprop", "sgd"] {
        let (h, on) = train(&half_cpu(Rounding::Half), opt, &mut CpuReference);
        let c = h.precision_check.expect("checked");
        eprintln!("{opt}: {}", c.summary());
        assert_eq!(c.action, PrecisionAction::Continued, "{}", c.summary());
        assert!(c.max_rel_diff < 0.01, "{}", c.summary());
        assert_eq!(on, "half-cpu");
        assert!(h.steps.last().unwrap().loss < h.steps[0].loss, "{opt}: {:?}", h.steps);
    }
}

/// 2 mantissa bits: the checked losses leave the tolerance, and the run falls back to the
/// reference with the numbers, and trains there.
#[test]
fn coarse_rounding_falls_back_with_the_measured_losses() {
    let (h, on) = train(&half_cpu(Rounding::Coarse), "adam", &mut CpuReference);
    let c = h.precision_check.expect("checked");
    eprintln!("{}", c.summary());
    assert_eq!(c.action, PrecisionAction::FellBack, "{}", c.summary());
    assert!(c.max_rel_diff > c.tolerance);
    assert_eq!(on, "cpu");
    assert!(c.summary().contains("training falls back to cpu"), "{}", c.summary());
    // The run on the reference trains: its last logged loss is below its first.
    assert!(h.steps.last().unwrap().loss < h.steps[0].loss, "{:?}", h.steps);
}

#[test]
fn nothing_is_checked_at_full_precision_or_without_a_reference_or_after_the_first_step() {
    let (h, _) = train(&Device::new(CpuBackend::new()), "adam", &mut CpuReference);
    assert!(h.precision_check.is_none());
    let (h, _) = train(&half_cpu(Rounding::Half), "adam", &mut NoCallbacks);
    assert!(h.precision_check.is_none());

    let dev = half_cpu(Rounding::Exact);
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

/// Mixed precision on a device without f16 narrowing: where its tensors are measured to be
/// halves, the loss scaler runs there (from at most 2^10: the scaled loss is a half too);
/// where they are exact, training stays f32; f32 training never scales.
#[test]
fn mixed_precision_scales_the_loss_where_tensors_are_halves() {
    use pixelgrad_nn::mixed::{scaler_for, ScaleOptions, HALF_STORAGE_MAX_SCALE};
    use pixelgrad_nn::optim::half::stores_halves;
    use pixelgrad_nn::Precision;
    let half = half_cpu(Rounding::Half);
    assert!(stores_halves(&half).unwrap());
    assert!(!stores_halves(&half_cpu(Rounding::Exact)).unwrap());
    assert!(!stores_halves(&Device::new(CpuBackend::new())).unwrap());
    let s = scaler_for(Precision::Mixed, &half, ScaleOptions::default()).unwrap().expect("a scaler on halves");
    assert_eq!(s.state().unwrap(), [HALF_STORAGE_MAX_SCALE, 0.0, 0.0]);
    let small = ScaleOptions { initial: 8.0, ..ScaleOptions::default() };
    assert_eq!(scaler_for(Precision::Mixed, &half, small).unwrap().unwrap().state().unwrap()[0], 8.0);
    assert!(scaler_for(Precision::Mixed, &half_cpu(Rounding::Exact), ScaleOptions::default()).unwrap().is_none());
    assert!(scaler_for(Precision::F32, &half, ScaleOptions::default()).unwrap().is_none());
}

/// Adam's state is `m`, `r = sqrt(v)` and the compensation `lo` on a device of halves, and
/// `m`, `v` elsewhere: a state moved from one to the other (a checkpoint, a fallback) is
/// converted at the next update, with `v = r^2`.
#[test]
fn adam_state_converts_between_half_and_full_precision_devices() {
    use pixelgrad_core::{Param, Tensor};
    let names = |o: &dyn pixelgrad_nn::Optimizer| o.state().tensors.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let half = half_cpu(Rounding::Half);
    let mut a = OptimizerKind::parse("adam").unwrap().build(0.01);
    let p = Param::new(Tensor::from_vec(&half, &[0.5, -0.25], [2]).unwrap());
    let g = Tensor::from_vec(&half, &[1e-3, -2e-3], [2]).unwrap();
    a.begin_step();
    a.update("w", &p, &g).unwrap();
    assert_eq!(names(&*a), ["m/w", "r/w", "lo/w"]);
    let r = a.state().tensors[1].1.to_vec().unwrap();
    // r = sqrt((1 - b2) g^2), rounded to half.
    assert!((r[0] - 1e-3 * 0.001f32.sqrt()).abs() < 1e-7, "{r:?}");

    let cpu = Device::new(CpuBackend::new());
    let mut b = OptimizerKind::parse("adam").unwrap().build(0.01);
    let moved = pixelgrad_nn::OptimizerState {
        tensors: a
            .state()
            .tensors
            .into_iter()
            .map(|(n, t)| (n, Tensor::from_vec(&cpu, &t.to_vec().unwrap(), t.shape().clone()).unwrap()))
            .collect(),
        scalars: a.state().scalars,
    };
    b.set_state(moved).unwrap();
    let q = Param::new(Tensor::from_vec(&cpu, &[0.5, -0.25], [2]).unwrap());
    b.begin_step();
    b.update("w", &q, &Tensor::from_vec(&cpu, &[1e-3, -2e-3], [2]).unwrap()).unwrap();
    assert_eq!(names(&*b), ["m/w", "v/w"]);
    let v = b.state().tensors[1].1.to_vec().unwrap();
    // v = b2 r^2 + (1 - b2) g^2 = (1 - b2) g^2 (b2 + 1) after the conversion (r^2 was
    // (1 - b2) g^2 = 1e-9, to the rounding of r in half).
    assert!((v[0] - 1.999e-9).abs() < 1e-11, "{v:?}");
}
