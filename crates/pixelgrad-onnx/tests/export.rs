//! Export round trips: pixelgrad models (the trained digits MLP and CNN presets, a network of
//! every exportable layer type, a fine-tuned imported backbone with a new head) written as
//! ONNX give onnxruntime the outputs pixelgrad computes, and import back to the same outputs.

mod common;

use std::path::{Path, PathBuf};

use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::layers::{Activation, AvgPool2d, BatchNorm, Conv2d, Dropout, Flatten, Linear, MaxPool2d};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{Init, Loss, Mode, Module, OptimizerKind, Sequential};
use pixelgrad_onnx::{export, npy, HostTensor, Input, Model, OnnxLayer, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-export-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// onnxruntime's output for `x` (through scripts/ort_run.py in the fixtures' venv).
fn onnxruntime(model: &Path, x: &HostTensor, dir: &Path) -> Vec<f32> {
    let _ = common::fixtures(); // makes sure the venv exists
    let root = common::repo_root();
    let xin = dir.join("x.npy");
    std::fs::write(&xin, npy::write(x).unwrap()).unwrap();
    let out = std::process::Command::new(root.join("target/onnx-venv/bin/python"))
        .arg(root.join("scripts/ort_run.py"))
        .arg(model)
        .arg(dir)
        .arg(format!("input={}", xin.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "onnxruntime refused the exported model: {}", String::from_utf8_lossy(&out.stderr));
    npy::load(&dir.join("output_0.npy")).unwrap().to_f32()
}

/// Exports `model`, runs it in onnxruntime and re-imported in pixelgrad, compares both with
/// pixelgrad's own output.
fn round_trip(name: &str, model: &dyn Module, x: &Tensor) {
    let dev = x.device().clone();
    let want = {
        let _g = pixelgrad_core::no_grad();
        model.forward(x, Mode::Eval).unwrap().to_vec().unwrap()
    };
    let dir = tmp(name);
    let path = dir.join("model.onnx");
    export::save(model, &x.dims()[1..], &path).unwrap();
    let host = HostTensor::f32(x.dims().to_vec(), x.to_vec().unwrap());
    let ort = onnxruntime(&path, &host, &dir);
    let scale = want.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    let err = |got: &[f32]| got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max) / scale;
    assert_eq!(ort.len(), want.len(), "{name}: output sizes differ");
    let e_ort = err(&ort);
    let back = Session::new(Model::load(&path).unwrap(), &dev).unwrap();
    let _g = pixelgrad_core::no_grad();
    let again = back.run(&[("input", Input::Tensor(x.clone()))]).unwrap()[0].1.to_host().unwrap().to_f32();
    let e_back = err(&again);
    println!("{name}: onnxruntime max rel error {e_ort:.2e}, re-imported {e_back:.2e}");
    assert!(e_ort < 1e-4, "{name}: onnxruntime differs by {e_ort}");
    assert!(e_back < 1e-5, "{name}: the re-imported model differs by {e_back}");
    std::fs::remove_dir_all(&dir).ok();
}

fn digits() -> (Vec<f32>, Vec<u32>) {
    let s = pixelgrad_data::digits_split(0.2, 42).unwrap();
    (s.train.images()[..400 * 64].to_vec(), s.train.labels()[..400].to_vec())
}

fn train_preset(preset: Preset) -> (Device, Sequential, Tensor) {
    let dev = cpu();
    let spec = ModelSpec { preset, input: [1, 8, 8], classes: 10 };
    let model = spec.build(&dev, 3).unwrap();
    let (x, y) = digits();
    let shape = [1usize, 8, 8];
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.01);
    let opts = FitOptions { epochs: 2, batch_size: 32, ..Default::default() };
    fit(&model, opt.as_mut(), Loss::CrossEntropy, &dev, Samples::new(&x, &shape, &y).unwrap(), None, &opts, &mut NoCallbacks).unwrap();
    let xb = Tensor::from_vec(&dev, &x[..16 * 64], [16, 1, 8, 8]).unwrap();
    (dev, model, xb)
}

#[test]
fn trained_mlp_preset_round_trips() {
    let (_, model, x) = train_preset(Preset::Mlp);
    round_trip("mlp", &model, &x);
}

#[test]
fn trained_cnn_preset_round_trips() {
    let (_, model, x) = train_preset(Preset::Cnn);
    round_trip("cnn", &model, &x);
}

#[test]
fn every_exportable_layer_round_trips() {
    let dev = cpu();
    let mut init = Init::new(9);
    let model = Sequential::new()
        .push(Conv2d::new(&dev, 3, 6, 3, 2, 1, &mut init).unwrap())
        .push(BatchNorm::new_2d(&dev, 6).unwrap())
        .push(Activation::LeakyRelu(0.1))
        .push(MaxPool2d { kernel: 3, stride: 1, padding: 1 })
        .push(AvgPool2d { kernel: 2, stride: 2, padding: 1 })
        .push(Flatten)
        .push(Dropout::new(0.3, 1).unwrap())
        .push(Sequential::new().push(Linear::new(&dev, 6 * 3 * 3, 12, &mut init).unwrap()).push(BatchNorm::new_1d(&dev, 12).unwrap()))
        .push(Activation::Gelu)
        .push(Linear::new(&dev, 12, 8, &mut init).unwrap())
        .push(Activation::Tanh)
        .push(Activation::Sigmoid)
        .push(Activation::Relu)
        .push(Activation::Softmax);
    let x = Tensor::rand_uniform(&dev, [4, 3, 9, 9], -1.0, 1.0, 4).unwrap();
    // one training pass so the batch-norm running statistics are not the defaults
    model.forward(&x, Mode::Train).unwrap();
    round_trip("all-layers", &model, &x);
}

#[test]
fn fine_tuned_imported_backbone_with_head_round_trips() {
    let dev = cpu();
    let model = Model::load(common::fixtures().join("models/ppocr_cls/model.onnx")).unwrap();
    let backbone = OnnxLayer::new(Session::new(model, &dev).unwrap(), None, Some("reshape2_0.tmp_0")).unwrap();
    let mut init = Init::new(2);
    let net = Sequential::new().push(backbone).push(Linear::new(&dev, 200, 3, &mut init).unwrap());
    let x = Tensor::rand_uniform(&dev, [2, 3, 48, 64], -1.0, 1.0, 8).unwrap();
    // one SGD step on everything, so the exported weights differ from the file's
    let loss = pixelgrad_core::composite::cross_entropy(
        &net.forward(&x, Mode::Train).unwrap(),
        &Tensor::from_vec(&dev, &[0.0, 2.0], [2]).unwrap(),
    )
    .unwrap();
    loss.backward().unwrap();
    OptimizerKind::parse("sgd").unwrap().build(0.05).step(&net).unwrap();
    round_trip("ppocr-backbone-head", &net, &x);
}

/// A small deterministic generator for the random architectures below.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
}

/// A random stack of the exportable layers for an input of `[c, h, w]`: convolutions of every
/// kernel, stride and padding that fit, pools (padding up to half the window), batch norms and
/// activations, then a flatten and one or two dense layers. `None` when the draw shrinks the
/// image to nothing.
fn random_net(dev: &Device, rng: &mut Lcg, mut c: usize, mut h: usize, mut w: usize, seed: u64) -> Option<Sequential> {
    let mut init = Init::new(seed);
    let mut net = Sequential::new();
    let act = |rng: &mut Lcg| match rng.below(5) {
        0 => Activation::Relu,
        1 => Activation::LeakyRelu(0.2),
        2 => Activation::Sigmoid,
        3 => Activation::Tanh,
        _ => Activation::Gelu,
    };
    for _ in 0..rng.range(1, 4) {
        match rng.below(4) {
            0 | 1 => {
                let (k, s) = (rng.range(1, 4), rng.range(1, 3));
                let p = rng.range(0, k.min(3) - 1 + usize::from(k == 1));
                let out = rng.range(1, 6);
                if h + 2 * p < k || w + 2 * p < k {
                    return None;
                }
                net = net.push(Conv2d::new(dev, c, out, k, s, p, &mut init).unwrap());
                (c, h, w) = (out, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1);
                if rng.below(2) == 0 {
                    net = net.push(BatchNorm::new_2d(dev, c).unwrap());
                }
                net = net.push(act(rng));
            }
            2 => {
                let (k, s) = (rng.range(2, 3), rng.range(1, 3));
                let p = rng.range(0, k / 2);
                if h + 2 * p < k || w + 2 * p < k {
                    return None;
                }
                net = if rng.below(2) == 0 {
                    net.push(MaxPool2d { kernel: k, stride: s, padding: p })
                } else {
                    net.push(AvgPool2d { kernel: k, stride: s, padding: p })
                };
                (h, w) = ((h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1);
            }
            _ => net = net.push(act(rng)),
        }
    }
    let mut f = c * h * w;
    net = net.push(Flatten);
    for _ in 0..rng.range(1, 2) {
        let out = rng.range(2, 9);
        net = net.push(Linear::new(dev, f, out, &mut init).unwrap());
        if rng.below(3) == 0 {
            net = net.push(BatchNorm::new_1d(dev, out).unwrap());
        }
        if rng.below(3) == 0 {
            net = net.push(Dropout::new(0.2, seed).unwrap());
        }
        net = net.push(act(rng));
        f = out;
    }
    if rng.below(2) == 0 {
        net = net.push(Activation::Softmax);
    }
    Some(net)
}

/// Architectures the hand-written cases above do not pick: random kernels, strides, paddings,
/// pools and activations, each after one training-mode pass (batch-norm statistics moved),
/// exported and run by onnxruntime.
#[test]
fn random_architectures_round_trip() {
    let dev = cpu();
    let mut rng = Lcg(20261205);
    let mut made = 0;
    for i in 0..200u64 {
        if made == 12 {
            break;
        }
        let (c, h, w) = (rng.range(1, 3), rng.range(4, 12), rng.range(4, 12));
        let Some(net) = random_net(&dev, &mut rng, c, h, w, i) else { continue };
        let x = Tensor::rand_uniform(&dev, [rng.range(1, 3), c, h, w], -1.0, 1.0, i).unwrap();
        net.forward(&x, Mode::Train).unwrap();
        println!("random-{i}: {}", net.describe());
        round_trip(&format!("random-{i}"), &net, &x);
        made += 1;
    }
    assert_eq!(made, 12, "the generator made too few architectures that fit");
}
