//! A half-float-only device, natively: Mesa's `MESA_EXTENSION_OVERRIDE` hides
//! `GL_EXT_color_buffer_float` from every context of this test process, so llvmpipe itself
//! refuses RGBA32F render targets (the framebuffer is incomplete) and keeps RGBA16F ones,
//! as on the phones and older GPUs the fallback is for. That is truer to such a device than
//! pretending in the capability detection: the backend's own measurement (a framebuffer
//! around a 1x1 texture) sees the driver's answer, and nothing can render into RGBA32F by
//! accident. Mesa reads the variable once per process, at its first context, so it is set
//! (once, before any context) by every test here, and these tests live in their own binary.

use std::sync::Once;

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
mod support;

use pixelgrad_nn::presets::Preset;
use pixelgrad_nn::train::{fit, Callbacks, FitOptions, PrecisionAction, PrecisionCheck, Samples, PRECISION_CHECK_STEPS};
use pixelgrad_nn::{Module, OptimizerKind};
use pixelgrad_webgl::{EmulatedPrecision, TexelFormat, WebGlBackend, WebGlOptions};

static HIDE: Once = Once::new();

/// Hides the 32-bit float render targets from this process's GL contexts.
fn half_float_only_device() {
    HIDE.call_once(|| std::env::set_var("MESA_EXTENSION_OVERRIDE", "-GL_EXT_color_buffer_float"));
}

fn backend(opts: WebGlOptions) -> pixelgrad_core::Result<WebGlBackend> {
    half_float_only_device();
    WebGlBackend::new_headless(opts)
}

#[test]
fn webgl2_falls_back_to_rgba16f_when_the_driver_renders_only_half_floats() {
    let b = backend(WebGlOptions::default()).expect("a half-float-only context still runs WebGL2");
    let r = b.report();
    assert!(!r.ext_color_buffer_float, "{r:?}");
    assert!(!r.float_render_target, "the driver still renders into RGBA32F: {r:?}");
    assert!(r.half_render_target, "{r:?}");
    assert_eq!(r.format, TexelFormat::Rgba16F);
    assert!(r.warnings.iter().any(|w| w.contains("falling back to RGBA16F")), "{:?}", r.warnings);
    let e = r.self_test.expect("self-test").max_rel_error;
    eprintln!("half-float-only WebGL2: self-test max relative error {e:.3e}");
    assert!(e > 1e-4 && e < 0.05, "{e}");
}

/// The caps of the RGBA16F fallback: the start-up probe measures 10 mantissa bits of
/// storage (a half's), the arithmetic is still highp, so training is expected to work only
/// with the half-precision measures; with the half emulation on top, both are 10 bits.
#[test]
fn the_caps_of_a_half_float_only_device_say_training_needs_the_half_measures() {
    use pixelgrad_core::{Arithmetic, Backend, Training};
    let b = backend(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
    let c = b.caps();
    assert_eq!((c.storage_mantissa_bits, c.arithmetic, c.arithmetic_mantissa_bits), (10, Arithmetic::Highp, 23), "{c:?}");
    assert_eq!(c.training, Training::ReliableWithHalfMeasures, "{c:?}");
    assert!(c.training_reason.contains("stored values keep 10 mantissa bits"), "{}", c.training_reason);
    let b = backend(WebGlOptions { self_test: false, emulate_precision: Some(EmulatedPrecision::Half), ..Default::default() }).unwrap();
    let c = b.caps();
    assert_eq!((c.storage_mantissa_bits, c.arithmetic, c.arithmetic_mantissa_bits), (10, Arithmetic::EmulatedHalf, 10), "{c:?}");
    assert_eq!(c.training, Training::ReliableWithHalfMeasures, "{c:?}");
}

/// The `webgl1` mode on a device that renders only half floats stores its tensors in
/// half-float textures (before issue 44 it refused, "EXT_color_buffer_half_float is present,
/// but this backend does not store half floats"): uploads are host-converted halves
/// (`HALF_FLOAT_OES` data in a WebGL1 context), reads go through `readPixels(RGBA, FLOAT)`,
/// the caps measure 10 stored bits (and the still-highp arithmetic's 23) and so the
/// optimizers' half measures, and memory is 8 bytes per texel.
#[test]
fn webgl1_mode_stores_half_floats_on_a_half_float_only_device() {
    use pixelgrad_core::{Arithmetic, Backend, Tensor, Training};
    let b = backend(WebGlOptions { webgl1: true, ..Default::default() }).expect("webgl1 on a half-float-only device");
    let r = b.report();
    assert!(r.webgl1 && !r.float_render_target && r.half_render_target, "{r:?}");
    assert_eq!(r.format, TexelFormat::Rgba16F);
    assert!(r.warnings.iter().any(|w| w.contains("storing tensors in half floats")), "{:?}", r.warnings);
    let e = r.self_test.expect("self-test").max_rel_error;
    eprintln!("half-float-only webgl1: self-test max relative error {e:.3e}");
    assert!(e > 1e-4 && e < 0.05, "{e}");
    let c = b.caps().clone();
    assert_eq!((c.storage_mantissa_bits, c.arithmetic, c.arithmetic_mantissa_bits), (10, Arithmetic::Highp, 23), "{c:?}");
    assert_eq!(c.training, Training::ReliableWithHalfMeasures, "{c:?}");
    assert!(c.reduced_precision.as_deref().is_some_and(|p| p.contains("RGBA16F")), "{c:?}");
    let dev = Device::new(b.clone());
    assert!(dev.name().starts_with("webgl1") && dev.name().contains("RGBA16F"), "{}", dev.name());
    // Values are halves: exact ones survive the round trip (and a draw), others round, the
    // range ends at 65504.
    let exact = [1.0f32, -0.5, 1024.0, 0.000_976_562_5, -65504.0, 3.0];
    let t = Tensor::from_vec(&dev, &exact, [6]).unwrap();
    assert_eq!(t.to_vec().unwrap(), exact);
    assert_eq!(t.mul_scalar(2.0).unwrap().mul_scalar(0.5).unwrap().to_vec().unwrap(), exact);
    let t = Tensor::from_vec(&dev, &[1.0 + f32::powi(2.0, -12), 70000.0], [2]).unwrap();
    assert_eq!(t.to_vec().unwrap(), [1.0, f32::INFINITY]);
    assert!(pixelgrad_nn::optim::half::stores_halves(&dev).unwrap());
    // 8 bytes per texel: a 4096-element tensor in 1024 texels (and a few of padding).
    let t = Tensor::zeros(&dev, [4096]).unwrap();
    let l = dev.backend().describe_storage(t.storage(), 4096).expect("layout");
    assert_eq!(l.format, "RGBA16F");
    assert_eq!(l.bytes, l.allocated * 8, "{l:?}");
}

/// Issue 44's acceptance on WebGL2 and in the `webgl1` mode: on the half-float-only device the
/// digits MLP and the small CNN (Adam, 2 epochs as in the page's test) go on past the
/// precision check and end within 1 point of the CPU's test accuracy with the same seed. (After
/// 1 epoch the WebGL2 CNN was 1.1 points short: 0.9025 against 0.9136.)
#[test]
fn webgl2_and_webgl1_train_the_digits_mlp_and_the_cnn_like_the_cpu_on_a_half_float_only_device() {
    for (preset, opt, lr) in [(Preset::Mlp, "adam", 0.003), (Preset::Cnn, "adam", 0.003)] {
        let (_, cpu_acc, _) = train_preset(&Device::new(CpuBackend::new()), preset, opt, lr, 32, 2);
        assert!(cpu_acc > 0.8, "{preset:?}: the cpu reached only {cpu_acc}");
        for webgl1 in [false, true] {
            let dev = Device::new(backend(WebGlOptions { webgl1, self_test: false, ..Default::default() }).unwrap());
            let (name, acc, check) = train_preset(&dev, preset, opt, lr, 32, 2);
            let check = check.expect("a half-float device is checked");
            eprintln!("{preset:?} {opt}: {}; test accuracy {acc} on {name} (cpu {cpu_acc})", check.summary());
            assert_eq!(check.action, PrecisionAction::Continued, "{}", check.summary());
            assert!(name.contains("RGBA16F") && name.starts_with("webgl1") == webgl1, "{name}");
            assert!((acc - cpu_acc).abs() <= 0.01, "{preset:?} {opt}: test accuracy {acc} on {name}, {cpu_acc} on the cpu");
        }
    }
}

/// With the precision emulation on top, WebGL2 is a device storing and computing in half.
#[test]
fn half_float_only_with_half_arithmetic_still_initialises() {
    let b = backend(WebGlOptions { emulate_precision: Some(EmulatedPrecision::Half), ..Default::default() }).unwrap();
    let r = b.report();
    assert_eq!(r.format, TexelFormat::Rgba16F);
    assert_eq!(r.emulated_precision, Some(EmulatedPrecision::Half));
    let _ = Device::new(b);
}

/// The issue's measured defect: on a half-float-only device the digits MLP (Adam) that
/// reaches ~0.94 on the CPU trained to ~0.17 test accuracy here (2 epochs; 0.097 in Chromium),
/// with no error: Adam's second moment underflowed in half. With a CPU reference
/// (`Callbacks::precision_reference`) fit first compares the first steps and either goes on
/// (and must then end within 1 point of the CPU) or falls back to the CPU with the measured
/// losses. Adam on a reduced-precision device keeps `sqrt(v)` and a compensated weight
/// (`pixelgrad_nn::optim::half`), so every combination now goes on and ends within 1 point:
/// with and without emulated half arithmetic, with Adam and with SGD.
#[test]
fn digits_mlp_on_a_half_float_only_device_trains_like_the_cpu() {
    let mut actions = Vec::new();
    for (opt, emulate) in [("adam", None), ("adam", Some(EmulatedPrecision::Half)), ("sgd", None), ("sgd", Some(EmulatedPrecision::Half))] {
        let (_, cpu_acc, none) = train(&Device::new(CpuBackend::new()), opt);
        assert!(none.is_none(), "no check on the CPU");
        let dev = Device::new(backend(WebGlOptions { self_test: false, emulate_precision: emulate, ..Default::default() }).unwrap());
        let (name, acc, check) = train(&dev, opt);
        let check = check.expect("a reduced-precision device is checked");
        eprintln!("{opt} {emulate:?}: {}; test accuracy {acc} on {name} (cpu {cpu_acc})", check.summary());
        actions.push((opt, emulate, check.action));
        assert!(check.reason.contains("RGBA16F"), "{}", check.reason);
        assert_eq!(check.device_losses.len(), PRECISION_CHECK_STEPS);
        assert_eq!(check.reference_losses.len(), PRECISION_CHECK_STEPS);
        match check.action {
            PrecisionAction::Continued => {
                assert!(check.max_rel_diff <= check.tolerance);
                assert!(name.starts_with("webgl"), "continued on {name}");
            }
            PrecisionAction::FellBack => {
                assert!(check.max_rel_diff > check.tolerance, "{}", check.summary());
                assert!(name.starts_with("cpu"), "fell back to {name}");
            }
        }
        assert!(
            (acc - cpu_acc).abs() <= 0.01,
            "{opt} {emulate:?}: test accuracy {acc} on {name}, {cpu_acc} on the cpu: {}",
            check.summary()
        );
    }
    // Before `optim::half`, both Adam runs fell back (the loss jumped to 2047 at step 3, or
    // turned NaN with half arithmetic).
    use PrecisionAction::Continued;
    let half = Some(EmulatedPrecision::Half);
    assert_eq!(actions, [("adam", None, Continued), ("adam", half, Continued), ("sgd", None, Continued), ("sgd", half, Continued)]);
}

/// 1 epoch of the digits MLP (Adam lr 0.003 or SGD lr 0.05, batch 32) with a CPU reference
/// for the precision check: the device trained on at the end, the test accuracy and the check.
fn train(dev: &Device, opt: &str) -> (String, f32, Option<PrecisionCheck>) {
    let lr = if opt == "sgd" { 0.05 } else { 0.003 };
    train_preset(dev, Preset::Mlp, opt, lr, 32, 1)
}

fn train_preset(
    dev: &Device,
    preset: Preset,
    opt: &str,
    lr: f32,
    batch_size: usize,
    epochs: usize,
) -> (String, f32, Option<PrecisionCheck>) {
    let (train, test, model) = support::digits_for(dev, preset);
    let shape = train.shape();
    let mut o = OptimizerKind::parse(opt).unwrap().build(lr);
    let s = Samples::new(train.images(), &shape, train.labels()).unwrap();
    let t = Samples::new(test.images(), &shape, test.labels()).unwrap();
    let opts = FitOptions { epochs, batch_size, read_every: 10, seed: 5, checkpoint_every: Some(0), ..Default::default() };
    let h = fit(&model, o.as_mut(), preset.loss(), dev, s, Some(t), &opts, &mut CpuReference).unwrap();
    let mut name = String::new();
    model.visit_params(&mut |_, p| {
        if name.is_empty() {
            name = p.device().name();
        }
    });
    (name, h.epochs.last().and_then(|e| e.test_accuracy).unwrap(), h.precision_check)
}

/// The seed article's network (48-64-2, sigmoid, MSE, SGD lr 0.5, batch 1) on a device that
/// stores and computes in half (hidden float targets plus emulated half arithmetic): the check
/// lets it go on, and it ends within 1 point of the CPU.
#[test]
fn seed_network_trains_on_a_half_float_device_with_half_arithmetic() {
    let (_, cpu_acc, _) = train_preset(&Device::new(CpuBackend::new()), Preset::SeedMlp, "sgd", 0.5, 1, 1);
    let dev = Device::new(
        backend(WebGlOptions { self_test: false, emulate_precision: Some(EmulatedPrecision::Half), ..Default::default() }).unwrap(),
    );
    let (name, acc, check) = train_preset(&dev, Preset::SeedMlp, "sgd", 0.5, 1, 1);
    let check = check.expect("checked");
    eprintln!("{}; test accuracy {acc} on {name} (cpu {cpu_acc})", check.summary());
    assert_eq!(check.action, PrecisionAction::Continued, "{}", check.summary());
    assert!(name.starts_with("webgl"), "{name}");
    assert!((acc - cpu_acc).abs() <= 0.01, "test accuracy {acc} on {name}, {cpu_acc} on the cpu");
}

/// Gives fit the CPU as the reference of its precision check.
struct CpuReference;
impl Callbacks for CpuReference {
    fn precision_reference(&mut self) -> Option<Device> {
        Some(Device::new(CpuBackend::new()))
    }
}

/// The compensated weight of `pixelgrad_nn::optim::half` on the half-float-only device: 40
/// updates of 1e-4 to a weight of 1 (each below half the half's ulp there, 4.9e-4) all vanish
/// from a plain sum but survive in `hi + lo`, with the elementwise fusion on (which would
/// compute the rounding error as 0 in one f32 pass without the flush) and with emulated half
/// arithmetic, where every op is rounded.
#[test]
fn compensated_weights_keep_updates_below_half_an_ulp() {
    use pixelgrad_core::Tensor;
    use pixelgrad_nn::optim::half::compensated_add;
    let h = |x: f32| half::f16::from_f32(x).to_f32();
    for emulate in [None, Some(EmulatedPrecision::Half)] {
        let dev = Device::new(backend(WebGlOptions { self_test: false, emulate_precision: emulate, ..Default::default() }).unwrap());
        let start = [1.0f32, 0.5, -2.0, 0.1];
        let d = [1e-4f32, -1e-4, 3e-4, 1e-5];
        let delta = Tensor::from_vec(&dev, &d, [4]).unwrap();
        let (mut hi, mut lo, mut plain) =
            (Tensor::from_vec(&dev, &start, [4]).unwrap(), None, Tensor::from_vec(&dev, &start, [4]).unwrap());
        for _ in 0..40 {
            plain = plain.add(&delta).unwrap();
            let (nh, nl) = compensated_add(&hi, lo.as_ref(), &delta).unwrap();
            (hi, lo) = (nh, Some(nl));
            dev.flush().unwrap();
        }
        let (hv, lv, pv) = (hi.to_vec().unwrap(), lo.unwrap().to_vec().unwrap(), plain.to_vec().unwrap());
        eprintln!("{emulate:?}: hi {hv:?} lo {lv:?} plain {pv:?}");
        // 1e-4 vanishes from a plain half sum at 1 (llvmpipe's RGBA16F stores truncate toward
        // zero, so a plain sum moving toward zero moves by whole ulps instead: also wrong).
        assert_eq!(pv[0], 1.0, "plain {pv:?}");
        for i in 0..4 {
            // From the stored start (0.1 is 0.0999756 in half), within a quarter of one update
            // (a plain sum misses by all 40).
            let want = h(start[i]) as f64 + 40.0 * h(d[i]) as f64;
            let got = hv[i] as f64 + lv[i] as f64;
            assert!((got - want).abs() <= 0.25 * d[i].abs() as f64, "{emulate:?} {i}: {got} vs {want}");
        }
    }
}

/// The network that cannot train in half precision (issue 44's acceptance): a regression whose
/// targets are in the thousands (y = 400 · Σx over 4 inputs in [0, 1)), so its squared errors
/// (~6·10^5 at the start) pass the half range (65504). On the half-float-only device with half
/// arithmetic the batch's sum of squared errors saturates at the half range (the checked losses
/// read 65504 / 16 = 4094 each); the precision check refuses the device with the measured
/// losses and training goes on on the CPU, where the loss falls.
#[test]
fn a_regression_past_the_half_range_is_refused_with_its_measured_losses() {
    let n = 256;
    let x: Vec<f32> = (0..n * 4).map(|i| ((i * 37 + 11) % 97) as f32 / 97.0).collect();
    let y: Vec<f32> = x.chunks(4).map(|r| 400.0 * r.iter().sum::<f32>()).collect();
    let cfg = pixelgrad_nn::ModelConfig::from_json(
        r#"{"layers": [{"type": "dense", "units": 8, "activation": "relu", "inputShape": [4]}, {"type": "dense", "units": 1}]}"#,
    )
    .unwrap();
    let dev = Device::new(
        backend(WebGlOptions { self_test: false, emulate_precision: Some(EmulatedPrecision::Half), ..Default::default() }).unwrap(),
    );
    let model = cfg.build(&dev, 3).unwrap();
    let mut o = OptimizerKind::parse("sgd").unwrap().build(1e-4);
    let s = Samples::with_values(&x, &[4], &y, &[1]).unwrap();
    let opts = FitOptions { epochs: 2, batch_size: 16, read_every: 4, seed: 5, checkpoint_every: Some(0), ..Default::default() };
    let h = fit(&model, o.as_mut(), pixelgrad_nn::Loss::Mse, &dev, s, None, &opts, &mut CpuReference).unwrap();
    let c = h.precision_check.expect("a half device is checked");
    eprintln!("{}", c.summary());
    assert_eq!(c.action, PrecisionAction::FellBack, "{}", c.summary());
    assert!(c.max_rel_diff > c.tolerance, "{}", c.summary());
    assert!(c.device_losses.iter().all(|l| !l.is_finite() || *l <= 65504.0), "{:?}", c.device_losses);
    assert!(c.reference_losses.iter().all(|l| l.is_finite() && *l > 65504.0), "{:?}", c.reference_losses);
    assert!(c.summary().contains("training falls back to cpu"), "{}", c.summary());
    let mut on = String::new();
    model.visit_params(&mut |_, p| on = p.device().name());
    assert_eq!(on, "cpu");
    assert!(h.steps.last().unwrap().loss < h.steps[0].loss, "{:?}", h.steps);
}
