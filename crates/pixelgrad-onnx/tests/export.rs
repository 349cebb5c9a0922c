//! Export round trips: pixelgrad models (the trained digits MLP and CNN presets, a network of
//! every exportable layer type, a fine-tuned imported backbone with a new head) written as
//! ONNX give onnxruntime the outputs pixelgrad computes, and import back to the same outputs.

mod common;

use common::export_round_trip::round_trip;

use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::layers::{Activation, AvgPool2d, BatchNorm, Conv2d, Dropout, Flatten, Linear, MaxPool2d};
use pixelgrad_nn::presets::{ModelSpec, Preset};
use pixelgrad_nn::train::{fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{Init, Loss, Mode, Module, OptimizerKind, Sequential};
use pixelgrad_onnx::{Model, OnnxLayer, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
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
    round_trip("mlp", &model, &x, 1e-5);
}

#[test]
fn trained_cnn_preset_round_trips() {
    let (_, model, x) = train_preset(Preset::Cnn);
    round_trip("cnn", &model, &x, 1e-5);
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
    round_trip("all-layers", &model, &x, 1e-5);
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
    round_trip("ppocr-backbone-head", &net, &x, 1e-5);
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
        round_trip(&format!("random-{seed}"), &net, &d.x, 1e-5);
        made += 1;
    }
    assert_eq!(made, 12, "too few random architectures fit");
}
