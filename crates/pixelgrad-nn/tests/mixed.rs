//! Mixed-precision training on the CPU backend: f16 rounding, what the graph keeps, accuracy
//! against f32 training with the same seed, overflow handling and the fallback.

use pixelgrad_core::{half::f16, mixed_precision, Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{Mode, Module, OptimizerKind, Precision, ScaleOptions};

fn dev() -> Device {
    Device::new(CpuBackend::new())
}

#[test]
fn narrow_f16_rounds_to_nearest_even() {
    let d = dev();
    let mut xs: Vec<f32> = (0..4000).map(|i| f32::from_bits(0x3000_0000u32.wrapping_add((i as u32).wrapping_mul(0x0012_3457)))).collect();
    xs.extend([
        0.0,
        -0.0,
        1.0,
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        1e9,
        6e-8,
        2.9e-8,
        3.0e-8,
        1e-10,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
    ]);
    let t = Tensor::from_vec(&d, &xs, [xs.len()]).unwrap();
    let n = t.narrow_f16().unwrap();
    assert_eq!(n.storage_dtype(), pixelgrad_core::kernel::DType::F16);
    let got = n.widen().unwrap().to_vec().unwrap();
    for (x, g) in xs.iter().zip(&got) {
        let want = f16::from_f32(*x).to_f32();
        assert!(want.to_bits() == g.to_bits() || (want.is_nan() && g.is_nan()), "{x:e}: got {g:e}, want {want:e}");
    }
    // the ties go to even, and the range ends at 65504
    assert_eq!(got[xs.len() - 15], 1.0);
    assert_eq!(got[xs.len() - 14], 1.0 + 2.0 * 2f32.powi(-10));
    assert_eq!(got[xs.len() - 12], 65504.0);
    assert_eq!(got[xs.len() - 11], f32::INFINITY);
    // not differentiable, and only from f32
    let p = Tensor::from_vec(&d, &[1.0], [1]).unwrap().with_grad();
    assert!(!p.narrow_f16().unwrap().requires_grad());
    assert!(n.narrow_f16().is_err());
}

/// The model and a batch of digits-sized inputs.
fn model_and_batch(d: &Device, preset: Preset) -> (pixelgrad_nn::Sequential, Tensor, Tensor) {
    let m = ModelSpec { preset, input: [1, 8, 8], classes: 10 }.build(d, 3).unwrap();
    let x = Tensor::rand_uniform(d, [32, 1, 8, 8], 0.0, 1.0, 9).unwrap();
    let y = Tensor::from_vec(d, &(0..32).map(|i| (i % 10) as f32).collect::<Vec<_>>(), [32]).unwrap();
    (m, x, y)
}

#[test]
fn mixed_scope_keeps_half_the_activation_bytes_and_close_gradients() {
    let d = dev();
    for preset in [Preset::Mlp, Preset::Cnn] {
        let (m, x, y) = model_and_batch(&d, preset);
        let grads = |mixed: bool| {
            let _g = mixed.then(mixed_precision);
            let l = preset.loss().compute(&m.forward(&x, Mode::Train).unwrap(), &y).unwrap();
            let bytes = l.graph_bytes();
            l.backward().unwrap();
            let mut g = Vec::new();
            m.visit_params(&mut |_, p| g.extend(p.grad().unwrap().to_vec().unwrap()));
            m.zero_grad();
            (bytes, g)
        };
        let (b32, g32) = grads(false);
        let (b16, g16) = grads(true);
        assert!(b32 > 0 && b16 > 0);
        let ratio = b16 as f64 / b32 as f64;
        eprintln!("{preset:?}: the graph keeps {b16} bytes mixed, {b32} f32 ({ratio:.3}x)");
        assert!(ratio <= 0.6, "{preset:?}: the mixed graph keeps {b16} bytes, f32 {b32} ({ratio:.3})");
        let scale = g32.iter().fold(0f32, |a, v| a.max(v.abs()));
        let worst = g32.iter().zip(&g16).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(worst <= 2e-2 * scale, "{preset:?}: gradients differ by {worst} (largest {scale})");
        assert!(g32 != g16, "{preset:?}: the mixed scope changed nothing");
    }
}

/// Test accuracy after `epochs` of Adam at the same seed, and the history.
fn fit_split(
    precision: Precision,
    preset: Preset,
    train: &pixelgrad_data::Dataset,
    test: &pixelgrad_data::Dataset,
    epochs: usize,
) -> (f32, pixelgrad_nn::train::History) {
    let d = dev();
    let shape = train.shape();
    let tr = Samples::new(train.images(), &shape, train.labels()).unwrap();
    let te = Samples::new(test.images(), &shape, test.labels()).unwrap();
    let m = ModelSpec { preset, input: shape, classes: 10 }.build(&d, 11).unwrap();
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.003);
    let opts = FitOptions { epochs, batch_size: 32, seed: 5, precision, checkpoint_every: Some(0), ..Default::default() };
    let h = fit(&m, opt.as_mut(), preset.loss(), &d, tr, Some(te), &opts, &mut NoCallbacks).unwrap();
    (h.epochs.last().unwrap().test_accuracy.unwrap(), h)
}

/// Mixed and f32 training from the same seed: test accuracies within `points` percentage
/// points, the mixed run really mixed.
fn compare(preset: Preset, train: &pixelgrad_data::Dataset, test: &pixelgrad_data::Dataset, epochs: usize, points: f32) {
    let (a32, h32) = fit_split(Precision::F32, preset, train, test, epochs);
    let (a16, h16) = fit_split(Precision::Mixed, preset, train, test, epochs);
    assert!(h32.mixed.is_none());
    let r = h16.mixed.as_ref().unwrap();
    assert_eq!((r.precision, r.fallback.as_deref()), ("mixed", None));
    eprintln!(
        "{} {preset:?}: test accuracy f32 {a32:.4}, mixed {a16:.4}; scale {} after {} skipped steps",
        train.name(),
        r.final_scale,
        r.skipped_steps
    );
    assert!(a32 > 0.9, "{preset:?}: f32 reached only {a32}");
    assert!((a32 - a16).abs() * 100.0 <= points + 1e-4, "{preset:?}: f32 {a32}, mixed {a16}");
}

#[test]
fn mixed_training_matches_f32_accuracy_on_digits() {
    let split = pixelgrad_data::digits_split(0.2, 7).unwrap();
    compare(Preset::Mlp, &split.train, &split.test, 6, 0.5);
    // 359 test images: one is 0.28 points, so the CNN gets two of them.
    compare(Preset::Cnn, &split.train, &split.test, 6, 0.6);
}

/// The MNIST CNN (6000 training images, 2 epochs, the whole 10,000-image test set), where
/// `../shared/data/mnist` is present.
#[test]
fn mixed_training_matches_f32_accuracy_on_mnist_cnn() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mnist");
    if !dir.is_dir() {
        eprintln!("skipped: no MNIST at {}", dir.display());
        return;
    }
    let split = pixelgrad_data::load_idx_dir(&dir).unwrap();
    let idx: Vec<usize> = (0..6000).collect();
    let train = split.train.subset(&idx, "mnist-6k").unwrap();
    compare(Preset::Cnn, &train, &split.test, 2, 0.5);
}

#[test]
fn overflowing_steps_are_skipped_and_the_scale_backs_off() {
    let d = dev();
    let (m, x, y) = model_and_batch(&d, Preset::Mlp);
    let before: Vec<Vec<f32>> = {
        let mut v = Vec::new();
        m.visit_params(&mut |_, p| v.push(p.tensor().to_vec().unwrap()));
        v
    };
    let xs = x.to_vec().unwrap();
    let ys: Vec<u32> = y.to_vec().unwrap().iter().map(|&v| v as u32).collect();
    let shape = [1usize, 8, 8];
    let s = Samples::new(&xs, &shape, &ys).unwrap();
    // 2^40 overflows every f16 gradient: 3 steps skipped, the scale halves each time.
    let opts = FitOptions {
        epochs: 3,
        batch_size: 32,
        precision: Precision::Mixed,
        loss_scale: ScaleOptions { initial: 2f32.powi(40), growth_interval: 2000 },
        checkpoint_every: Some(0),
        ..Default::default()
    };
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let h = fit(&m, opt.as_mut(), preset_loss(), &d, s, None, &opts, &mut NoCallbacks).unwrap();
    let r = h.mixed.unwrap();
    assert_eq!(r.skipped_steps, 3);
    assert_eq!(r.final_scale, 2f32.powi(37));
    let mut after = Vec::new();
    m.visit_params(&mut |_, p| after.push(p.tensor().to_vec().unwrap()));
    assert_eq!(before, after, "a skipped step changed the weights");
    // A scale that fits: steps run, the weights move, nothing is skipped.
    let opts = FitOptions { loss_scale: ScaleOptions { initial: 1024.0, growth_interval: 2 }, ..opts };
    let h = fit(&m, opt.as_mut(), preset_loss(), &d, s, None, &opts, &mut NoCallbacks).unwrap();
    let r = h.mixed.unwrap();
    assert_eq!(r.skipped_steps, 0);
    // grows after every second good step: 3 steps -> one doubling
    assert_eq!(r.final_scale, 2048.0);
    let mut moved = Vec::new();
    m.visit_params(&mut |_, p| moved.push(p.tensor().to_vec().unwrap()));
    assert_ne!(before, moved);
    // bad scale options are refused by name
    let bad = FitOptions { loss_scale: ScaleOptions { initial: 0.0, growth_interval: 1 }, ..opts };
    let e = fit(&m, opt.as_mut(), preset_loss(), &d, s, None, &bad, &mut NoCallbacks).unwrap_err().to_string();
    assert!(e.contains("loss scale"), "{e}");
}

fn preset_loss() -> pixelgrad_nn::Loss {
    Preset::Mlp.loss()
}

#[test]
fn devices_without_f16_train_in_f32_and_say_so() {
    let d = Device::new(pixelgrad_conformance::narrow::F32Only(CpuBackend::new()));
    assert!(!pixelgrad_core::mixed_precision_available(&d));
    let (m, x, y) = model_and_batch(&d, Preset::Mlp);
    // the scope changes nothing there
    let l = {
        let _g = mixed_precision();
        Preset::Mlp.loss().compute(&m.forward(&x, Mode::Train).unwrap(), &y).unwrap()
    };
    let l32 = Preset::Mlp.loss().compute(&m.forward(&x, Mode::Train).unwrap(), &y).unwrap();
    assert_eq!(l.graph_bytes(), l32.graph_bytes());
    let xs = x.to_vec().unwrap();
    let ys: Vec<u32> = y.to_vec().unwrap().iter().map(|&v| v as u32).collect();
    let shape = [1usize, 8, 8];
    let s = Samples::new(&xs, &shape, &ys).unwrap();
    let opts = FitOptions { epochs: 1, batch_size: 16, precision: Precision::Mixed, checkpoint_every: Some(0), ..Default::default() };
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
    let h = fit(&m, opt.as_mut(), Preset::Mlp.loss(), &d, s, None, &opts, &mut NoCallbacks).unwrap();
    let r = h.mixed.unwrap();
    assert_eq!(r.precision, "f32");
    assert!(r.fallback.unwrap().contains("f16"));
}
