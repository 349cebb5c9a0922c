//! The cross-check engine on the CPU backends (the GPU backends run it in their own tests and
//! the CLI's): the fast f32 backend passes against the f64 reference; an injected wrong kernel
//! result fails the check and the report names the tensor it produced and that op. Also the
//! layout table and fit pacing.

use pixelgrad_core::Device;
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::crosscheck::{self, with_fault, CheckActivation, CheckConfig, Fault};
use pixelgrad_nn::layouts::{format_table, layout_table};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{Loss, Module, OptimizerKind};

fn cpu() -> Device {
    Device::new(CpuBackend::new())
}
fn reference() -> Device {
    Device::new(CpuBackend::reference())
}

#[test]
fn fast_cpu_passes_against_the_reference() {
    for act in ["sigmoid", "tanh", "relu"] {
        let cfg =
            CheckConfig { layers: vec![4, 5, 3, 2], activation: CheckActivation::parse(act).unwrap(), steps: 4, ..Default::default() };
        let r = crosscheck::run(&cfg, &cpu(), &reference()).unwrap();
        assert!(r.passed(), "{}", r.table());
        // 3 layers: pre+act each, loss, 2 hidden-activation gradients, 2 grads and 2 updates each
        assert_eq!(r.rows.len(), 4 * (6 + 1 + 2 + 6 + 6));
        assert!(r.rows.iter().any(|row| row.max_abs > 0.0), "f32 against f64 should differ somewhere");
        let names: Vec<&str> = r.rows.iter().take(21).map(|row| row.name.as_str()).collect();
        for want in ["layer1.pre", "layer3.act", "loss", "layer2.act.grad", "layer1.act.grad", "layer1.weight.grad", "layer3.bias"] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
    }
}

#[test]
fn an_injected_fault_fails_and_names_the_tensor_and_op() {
    let cfg = CheckConfig::default();
    let r = crosscheck::run(&cfg, &with_fault(&cpu(), Fault::parse("sigmoid").unwrap()), &reference()).unwrap();
    assert!(!r.passed());
    let f = r.first_failure().unwrap();
    assert_eq!((f.step, f.name.as_str(), f.op.as_str()), (0, "layer1.act", "sigmoid"), "{}", r.table());
    assert!(r.summary().contains("layer1.act") && r.summary().contains("sigmoid"), "{}", r.summary());
    assert!(r.table().contains("<- FIRST FAILURE"));
    assert_eq!(r.to_json()["firstFailure"]["tensor"], "layer1.act");

    // Only the 3rd matmul (step 1: layer1, layer2 forward; then the first backward matmul)
    let r = crosscheck::run(&cfg, &with_fault(&cpu(), Fault::parse("matmul@2+0.5").unwrap()), &reference()).unwrap();
    let f = r.first_failure().unwrap();
    assert!(f.name.ends_with(".grad") && f.op.contains("matmul"), "{}", r.table());
    // every forward row of step 1 still passes
    assert!(r.rows.iter().take(5).all(|row| row.pass), "{}", r.table());
}

#[test]
fn bad_configs_are_typed_errors() {
    let e = crosscheck::run(&CheckConfig { layers: vec![4], ..Default::default() }, &cpu(), &reference()).err().unwrap();
    assert!(e.to_string().contains("layers"), "{e}");
    assert!(CheckActivation::parse("gelu").unwrap_err().to_string().contains("sigmoid"));
}

#[test]
fn layout_table_lists_params_and_optimizer_state() {
    let dev = cpu();
    let model = ModelSpec { preset: Preset::Mlp, input: [1, 1, 4], classes: 2 }.build(&dev, 0).unwrap();
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let x: Vec<f32> = (0..32).map(|i| i as f32 / 32.0).collect();
    let y: Vec<u32> = (0..8).map(|i| i % 2).collect();
    let s = Samples::new(&x, &[1, 1, 4], &y).unwrap();
    let opts = FitOptions { batch_size: 8, checkpoint_every: Some(0), ..Default::default() };
    fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, s, None, &opts, &mut NoCallbacks).unwrap();
    let rows = layout_table(&model, Some(&*opt));
    let mut params = 0;
    model.visit_params(&mut |_, _| params += 1);
    assert!(rows.len() > params, "adam moments missing: {rows:?}");
    let w = &rows[0];
    let l = w.storage.as_ref().unwrap();
    assert_eq!((l.container, l.format.as_str(), l.used, l.bytes), ("host", "f32", w.elements as u64, 4 * w.elements as u64));
    assert!(rows.iter().any(|r| r.name.starts_with("m/")), "{rows:?}");
    let t = format_table(&rows);
    assert!(t.contains("1.weight") && t.contains("m/1.weight") && t.contains("bytes"), "{t}");
}

/// A throttled fit gives the same weights bit for bit and takes at least 0.9x the expected
/// time (lower bound only).
#[test]
fn paced_fit_is_bit_identical_and_not_faster_than_asked() {
    let train = |rate: Option<f64>| {
        let dev = cpu();
        let model = ModelSpec { preset: Preset::Mlp, input: [1, 1, 4], classes: 2 }.build(&dev, 3).unwrap();
        let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
        let x: Vec<f32> = (0..4 * 40).map(|i| ((i * 7) % 13) as f32 / 13.0).collect();
        let y: Vec<u32> = (0..40).map(|i| (i % 2) as u32).collect();
        let s = Samples::new(&x, &[1, 1, 4], &y).unwrap();
        let opts = FitOptions { batch_size: 4, epochs: 2, checkpoint_every: Some(0), max_steps_per_second: rate, ..Default::default() };
        let t0 = std::time::Instant::now();
        fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, s, None, &opts, &mut NoCallbacks).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let w: Vec<Vec<u32>> = pixelgrad_nn::io::named_tensors(&model)
            .iter()
            .map(|(_, t)| t.to_vec().unwrap().iter().map(|v| v.to_bits()).collect())
            .collect();
        (w, secs)
    };
    let (fast, _) = train(None);
    let (slow, secs) = train(Some(20.0));
    assert_eq!(fast, slow);
    let steps = 20.0; // 40 samples / batch 4 x 2 epochs
    assert!(secs >= 0.9 * steps / 20.0, "20 steps at 20/s took {secs:.3} s");
    let bad = FitOptions { max_steps_per_second: Some(0.0), ..Default::default() };
    let dev = cpu();
    let model = ModelSpec { preset: Preset::Mlp, input: [1, 1, 4], classes: 2 }.build(&dev, 3).unwrap();
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
    let x = [0.0f32; 8];
    let s = Samples::new(&x, &[1, 1, 4], &[0, 1]).unwrap();
    let e = fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, s, None, &bad, &mut NoCallbacks).unwrap_err();
    assert!(e.to_string().contains("max_steps_per_second"), "{e}");
}
