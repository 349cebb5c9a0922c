//! safetensors save/load (round trip and every validation error), presets, and the fit loop.

use std::collections::HashMap;
use std::ops::ControlFlow;

use pixelgrad_core::{Device, Tensor};
use pixelgrad_cpu::CpuBackend;
use pixelgrad_nn::io::{load, load_bytes, read_metadata, save, to_bytes};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{evaluate, fit, shuffled, Callbacks, EpochLog, FitOptions, NoCallbacks, Samples, StepLog};
use pixelgrad_nn::{Loss, Mode, Module, OptimizerKind};

fn dev() -> Device {
    Device::new(CpuBackend::new())
}

fn spec(p: Preset) -> ModelSpec {
    ModelSpec { preset: p, input: [1, 8, 8], classes: 10 }
}

#[test]
fn save_load_round_trip_with_metadata() {
    let d = dev();
    let a = spec(Preset::Cnn).build(&d, 1).unwrap();
    let b = spec(Preset::Cnn).build(&d, 2).unwrap();
    let x = Tensor::rand_uniform(&d, [2, 1, 8, 8], 0.0, 1.0, 5).unwrap();
    assert_ne!(a.forward(&x, Mode::Eval).unwrap().to_vec().unwrap(), b.forward(&x, Mode::Eval).unwrap().to_vec().unwrap());
    let path = std::env::temp_dir().join(format!("pixelgrad-rt-{}.safetensors", std::process::id()));
    let meta = HashMap::from([("k".to_string(), "v".to_string())]);
    save(&a, &path, &meta).unwrap();
    load(&b, &path).unwrap();
    assert_eq!(a.forward(&x, Mode::Eval).unwrap().to_vec().unwrap(), b.forward(&x, Mode::Eval).unwrap().to_vec().unwrap());
    assert_eq!(read_metadata(&std::fs::read(&path).unwrap()).unwrap()["k"], "v");
    std::fs::remove_file(&path).ok();
}

#[test]
fn load_rejects_mismatches_with_names_and_shapes() {
    let d = dev();
    let mlp10 = spec(Preset::Mlp).build(&d, 1).unwrap();
    let mlp3 = ModelSpec { preset: Preset::Mlp, input: [1, 8, 8], classes: 3 }.build(&d, 1).unwrap();
    let bytes = to_bytes(&mlp10, &HashMap::new()).unwrap();
    let e = load_bytes(&mlp3, &bytes).unwrap_err().to_string();
    assert!(e.contains("3.weight") && e.contains("[256, 10]") && e.contains("[256, 3]"), "{e}");
    // a different architecture: unknown and missing tensors
    let cnn = spec(Preset::Cnn).build(&d, 1).unwrap();
    let e = load_bytes(&cnn, &bytes).unwrap_err().to_string();
    assert!(e.contains("does not exist") || e.contains("missing"), "{e}");
    // garbage and truncated files
    assert!(load_bytes(&mlp10, b"not a model").unwrap_err().to_string().contains("not a safetensors file"));
    assert!(load_bytes(&mlp10, &bytes[..bytes.len() / 2]).is_err());
    let e = load(&mlp10, std::path::Path::new("/nonexistent/model.safetensors")).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/model.safetensors"), "{e}");
}

#[test]
fn load_rejects_wrong_dtype() {
    use safetensors::tensor::{serialize, Dtype, TensorView};
    let d = dev();
    let m = ModelSpec { preset: Preset::SeedMlp, input: [1, 6, 8], classes: 2 }.build(&d, 0).unwrap();
    let mut owned = Vec::new();
    m.visit_params(&mut |n, p| owned.push((n.to_string(), p.shape().dims().to_vec())));
    let bufs: Vec<Vec<u8>> = owned.iter().map(|(_, s)| vec![0u8; s.iter().product::<usize>() * 8]).collect();
    let views: Vec<(String, TensorView)> =
        owned.iter().zip(&bufs).map(|((n, s), b)| (n.clone(), TensorView::new(Dtype::F64, s.clone(), b).unwrap())).collect();
    let bytes = serialize(views, None).unwrap();
    let e = load_bytes(&m, &bytes).unwrap_err().to_string();
    assert!(e.contains("F64") && e.contains("F32"), "{e}");
}

#[test]
fn spec_metadata_round_trip() {
    for p in [Preset::SeedMlp, Preset::Mlp, Preset::Cnn] {
        let s = ModelSpec { preset: p, input: [1, 28, 28], classes: 10 };
        assert_eq!(ModelSpec::from_meta(&s.to_meta()).unwrap(), s);
    }
    assert!(ModelSpec::from_meta("mlp;1,2;3").is_err());
    assert!(Preset::parse("resnet").is_err());
}

/// Two well separated Gaussian blobs in 4-d.
fn blobs(n: usize) -> (Vec<f32>, Vec<u32>) {
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..n {
        let c = (i % 2) as u32;
        for j in 0..4 {
            let noise = pixelgrad_core::rng::normal(3, (i * 4 + j) as u64) * 0.3;
            x.push(if c == 1 { 1.0 } else { -1.0 } + noise);
        }
        y.push(c);
    }
    (x, y)
}

struct Recorder {
    steps: Vec<StepLog>,
    epochs: Vec<EpochLog>,
    stop_after_epoch: Option<usize>,
}

impl Callbacks for Recorder {
    fn on_step(&mut self, l: &StepLog) -> ControlFlow<()> {
        self.steps.push(l.clone());
        ControlFlow::Continue(())
    }
    fn on_epoch(&mut self, l: &EpochLog) -> ControlFlow<()> {
        self.epochs.push(l.clone());
        if Some(l.epoch) == self.stop_after_epoch {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

#[test]
fn fit_learns_and_reads_back_every_n_steps() {
    let d = dev();
    let (x, y) = blobs(200);
    let shape = [1usize, 1, 4];
    let s = Samples::new(&x, &shape, &y).unwrap();
    let model = ModelSpec { preset: Preset::Mlp, input: [1, 1, 4], classes: 2 }.build(&d, 0).unwrap();
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let opts = FitOptions {
        epochs: 3,
        batch_size: 16,
        read_every: 4,
        shuffle: true,
        seed: 1,
        checkpoint_every: Some(0),
        stop_on_nan: false,
        ..Default::default()
    };
    let mut rec = Recorder { steps: vec![], epochs: vec![], stop_after_epoch: None };
    let reads_before = d.counters().readbacks;
    let h = fit(&model, opt.as_mut(), Loss::CrossEntropy, &d, s, Some(s), &opts, &mut rec).unwrap();
    // 13 steps per epoch, read every 4 and at the epoch end: steps 4, 8, 12, 13 -> 4 logs per epoch
    assert_eq!(rec.steps.len(), 12);
    assert_eq!(rec.steps.iter().map(|s| s.step).take(4).collect::<Vec<_>>(), vec![4, 8, 12, 13]);
    assert_eq!(h.epochs.len(), 3);
    let last = h.epochs.last().unwrap();
    assert!(last.test_accuracy.unwrap() > 0.95, "{last:?}");
    assert!(last.train_loss < h.epochs[0].train_loss);
    // one readback per log plus one per evaluation (if the backend counts readbacks at all)
    let reads = d.counters().readbacks - reads_before;
    assert!(reads == 0 || reads <= 12 + 3, "{reads} readbacks");
    let (l, a) = evaluate(&model, Loss::CrossEntropy, &d, s, 64).unwrap();
    assert!((a.unwrap() - last.test_accuracy.unwrap()).abs() < 1e-6 && (l - last.test_loss.unwrap()).abs() < 1e-5);
}

#[test]
fn fit_stops_when_a_callback_breaks_and_rejects_bad_options() {
    let d = dev();
    let (x, y) = blobs(40);
    let shape = [4usize];
    let s = Samples::new(&x, &shape, &y).unwrap();
    let model = ModelSpec { preset: Preset::Mlp, input: [1, 1, 4], classes: 2 }.build(&d, 0).unwrap();
    let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
    let mut rec = Recorder { steps: vec![], epochs: vec![], stop_after_epoch: Some(0) };
    let opts = FitOptions { epochs: 5, batch_size: 8, ..Default::default() };
    fit(&model, opt.as_mut(), Loss::CrossEntropy, &d, s, None, &opts, &mut rec).unwrap();
    assert_eq!(rec.epochs.len(), 1);
    let bad = FitOptions { batch_size: 0, ..Default::default() };
    assert!(fit(&model, opt.as_mut(), Loss::CrossEntropy, &d, s, None, &bad, &mut NoCallbacks).is_err());
    assert!(Samples::new(&x[..5], &shape, &y).is_err());
}

#[test]
fn losses_on_one_hot_targets() {
    let d = dev();
    let out = Tensor::from_vec(&d, &[0.9, 0.1, 0.2, 0.8], [2, 2]).unwrap();
    let cls = Tensor::from_vec(&d, &[0.0, 1.0], [2]).unwrap();
    // MSE against one-hot: ((0.1)^2 + 0.1^2 + 0.2^2 + 0.2^2) / 4
    let mse = Loss::Mse.compute(&out, &cls).unwrap().item().unwrap();
    assert!((mse - 0.025).abs() < 1e-6, "{mse}");
    let ce = Loss::CrossEntropy.compute(&out, &cls).unwrap().item().unwrap();
    let ce1 = Loss::CrossEntropyOneHot.compute(&out, &cls).unwrap().item().unwrap();
    assert!((ce - ce1).abs() < 1e-6);
    assert!(Loss::parse("hinge").is_err());
}

#[test]
fn shuffling_is_a_seeded_permutation() {
    let a = shuffled(100, 7);
    let mut s = a.clone();
    s.sort();
    assert_eq!(s, (0..100).collect::<Vec<_>>());
    assert_eq!(a, shuffled(100, 7));
    assert_ne!(a, shuffled(100, 8));
}

/// Model files are the same bytes for the same model and metadata, whatever the order a
/// `HashMap` iterates in (the safetensors crate writes the metadata in that order): metadata
/// built in two insertion orders, with enough keys that a random order shows.
#[test]
fn the_same_model_gives_the_same_file_bytes() {
    let d = dev();
    let m = spec(Preset::Mlp).build(&d, 1).unwrap();
    let keys: Vec<(String, String)> = (0..24).map(|i| (format!("key{i}"), format!("value{i}"))).collect();
    let a: HashMap<String, String> = keys.iter().cloned().collect();
    let b: HashMap<String, String> = keys.iter().rev().cloned().collect();
    let (x, y) = (to_bytes(&m, &a).unwrap(), to_bytes(&m, &b).unwrap());
    assert!(x == y, "two files of the same model differ");
    assert_eq!(x.len() % 8, 0, "header padded to 8 bytes");
    assert_eq!(read_metadata(&x).unwrap(), a);
    let m2 = spec(Preset::Mlp).build(&d, 2).unwrap();
    load_bytes(&m2, &x).unwrap();
    assert!(to_bytes(&m2, &a).unwrap() == x);
}
