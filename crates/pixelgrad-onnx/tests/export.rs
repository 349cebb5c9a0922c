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

/// Architectures the hand-written cases above do not pick: the conformance suite's random
/// stacks (kernels, strides, paddings, pools, norms, activations), each with a dropout added
/// and after one training-mode pass (batch-norm statistics moved), exported and run by
/// onnxruntime.
#[test]
fn random_architectures_round_trip() {
    let dev = cpu();
    let mut made = 0;
    for seed in 0..100u64 {
        if made == 12 {
            break;
        }
        let Some(d) = pixelgrad_conformance::random_nets::draw(&dev, seed).unwrap() else { continue };
        let net = Sequential::new().push(d.net).push(Dropout::new(0.2, seed).unwrap());
        net.forward(&d.x, Mode::Train).unwrap();
        println!("random-{seed}: {}", net.describe());
        round_trip(&format!("random-{seed}"), &net, &d.x);
        made += 1;
    }
    assert_eq!(made, 12, "too few random architectures fit");
}
