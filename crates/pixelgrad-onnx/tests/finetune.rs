//! Imported models as layers of a `Sequential`: gradients reach their weights when trainable,
//! nothing changes when frozen, and a frozen pretrained backbone (the PP-OCR text direction
//! classifier up to its 200 pooled features) plus a new dense head learns the digits (well
//! above chance: features made for text orientation measure ~0.5 held-out accuracy here, 10
//! classes, 320 training samples).

mod common;

use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::layers::Linear;
use pixelgrad_nn::train::{evaluate, fit, FitOptions, NoCallbacks, Samples};
use pixelgrad_nn::{Init, Loss, Mode, Module, OptimizerKind, Sequential};
use pixelgrad_onnx::{Model, OnnxLayer, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn gemm_layer(dev: &Device) -> OnnxLayer {
    // Gemm: y = a @ b + c, with b [5, 3] and c [3] as weights
    let model = Model::load(common::fixtures().join("ops/gemm_basic/model.onnx")).unwrap();
    OnnxLayer::new(Session::new(model, dev).unwrap(), None, None).unwrap()
}

fn values(m: &dyn Module) -> Vec<Vec<f32>> {
    let mut v = Vec::new();
    m.visit_params(&mut |_, p| v.push(p.tensor().to_vec().unwrap()));
    v
}

#[test]
fn imported_weights_train_unless_frozen() {
    let dev = cpu();
    let model = Sequential::new().push(gemm_layer(&dev));
    let mut names = Vec::new();
    model.visit_params(&mut |n, _| names.push(n.to_string()));
    assert_eq!(names, ["0.b", "0.c"]);
    let x = Tensor::rand_uniform(&dev, [4, 5], -1.0, 1.0, 3).unwrap();
    let target = Tensor::zeros(&dev, [4, 3]).unwrap();
    let loss_of = |m: &Sequential| pixelgrad_core::composite::mse(&m.forward(&x, Mode::Train).unwrap(), &target).unwrap();

    let mut opt = OptimizerKind::parse("sgd").unwrap().build(0.1);
    let before = loss_of(&model).item().unwrap();
    for _ in 0..5 {
        let l = loss_of(&model);
        l.backward().unwrap();
        opt.step(&model).unwrap();
    }
    let after = loss_of(&model).item().unwrap();
    assert!(after < before * 0.9, "training the imported Gemm: loss {before} -> {after}");

    model.set_trainable(false);
    assert_eq!(model.num_trainable(), 0);
    assert_eq!(model.num_params(), 5 * 3 + 3);
    let frozen = values(&model);
    let l = loss_of(&model);
    assert!(l.backward().is_err() || values(&model) == frozen, "a frozen graph has nothing to differentiate");
    opt.step(&model).unwrap();
    assert_eq!(values(&model), frozen, "a frozen imported layer must not change");
}

/// Digits 8x8 in [0, 1] → 3 x 48 x 48 in [-1, 1] (nearest upscaling): the classifier's input
/// height and value range.
fn to_rgb48(images: &[f32]) -> Vec<f32> {
    let n = images.len() / 64;
    let mut out = Vec::with_capacity(n * 3 * 48 * 48);
    for s in 0..n {
        for _c in 0..3 {
            for y in 0..48 {
                for x in 0..48 {
                    out.push(1.0 - 2.0 * images[s * 64 + (y / 6) * 8 + x / 6]);
                }
            }
        }
    }
    out
}

#[test]
fn frozen_pretrained_backbone_with_a_new_head_learns_digits() {
    let dev = cpu();
    let split = pixelgrad_data::digits_split(0.2, 42).unwrap();
    let (ntr, nte) = (320, 200);
    let xtr = to_rgb48(&split.train.images()[..ntr * 64]);
    let xte = to_rgb48(&split.test.images()[..nte * 64]);
    let (ytr, yte) = (&split.train.labels()[..ntr], &split.test.labels()[..nte]);
    let shape = [3usize, 48, 48];
    let train = Samples::new(&xtr, &shape, ytr).unwrap();
    let test = Samples::new(&xte, &shape, yte).unwrap();

    let model = Model::load(common::fixtures().join("models/ppocr_cls/model.onnx")).unwrap();
    let backbone = OnnxLayer::new(Session::new(model, &dev).unwrap(), Some("x"), Some("reshape2_0.tmp_0")).unwrap();
    backbone.set_trainable(false);
    let mut init = Init::new(5);
    let net = Sequential::new().push(backbone).push(Linear::new(&dev, 200, 10, &mut init).unwrap());
    assert_eq!(net.num_trainable(), 200 * 10 + 10);
    let frozen_before: Vec<f32> = values(net.layers()[0].as_ref()).concat();

    let acc0 = evaluate(&net, Loss::CrossEntropy, &dev, test, 50).unwrap().1.expect("class indices have an accuracy");
    let mut opt = OptimizerKind::parse("adam").unwrap().build(0.02);
    let opts = FitOptions { epochs: 6, batch_size: 32, seed: 1, ..Default::default() };
    fit(&net, opt.as_mut(), Loss::CrossEntropy, &dev, train, None, &opts, &mut NoCallbacks).unwrap();
    let acc1 = evaluate(&net, Loss::CrossEntropy, &dev, test, 50).unwrap().1.expect("class indices have an accuracy");
    println!("held-out accuracy: {acc0:.3} before, {acc1:.3} after training the head");
    assert!(acc1 > acc0 + 0.25 && acc1 > 0.4, "held-out accuracy {acc0} -> {acc1}");
    assert_eq!(values(net.layers()[0].as_ref()).concat(), frozen_before, "the frozen backbone changed");
}

#[test]
fn imported_recurrent_layers_train() {
    // LSTM (weights w, r) and bidirectional GRU (w, r, b and the initial state h0): the
    // unrolled steps differentiate back to every weight and a few Adam steps lower the loss
    let dev = cpu();
    for case in ["lstm_hardsigmoid_activations", "gru_bidirectional_lbr1"] {
        let model = Model::load(common::fixtures().join(format!("ops/{case}/model.onnx"))).unwrap();
        let layer = OnnxLayer::new(Session::new(model, &dev).unwrap(), None, None).unwrap();
        let model = Sequential::new().push(layer);
        let mut names = Vec::new();
        model.visit_params(&mut |n, _| names.push(n.to_string()));
        assert!(names.contains(&"0.w".to_string()) && names.contains(&"0.r".to_string()), "{case}: {names:?}");
        let x = Tensor::rand_uniform(&dev, [5, 3, 4], -1.0, 1.0, 11).unwrap();
        let target = Tensor::full(&dev, model.forward(&x, Mode::Eval).unwrap().dims().to_vec(), 0.25).unwrap();
        let loss_of = |m: &Sequential| pixelgrad_core::composite::mse(&m.forward(&x, Mode::Train).unwrap(), &target).unwrap();
        let mut opt = OptimizerKind::parse("adam").unwrap().build(0.05);
        let before = loss_of(&model).item().unwrap();
        let start = values(&model);
        for _ in 0..20 {
            let l = loss_of(&model);
            l.backward().unwrap();
            opt.step(&model).unwrap();
        }
        let after = loss_of(&model).item().unwrap();
        assert!(after < before * 0.5, "{case}: loss {before} -> {after}");
        let moved = values(&model).iter().zip(&start).filter(|(a, b)| a != b).count();
        assert_eq!(moved, start.len(), "{case}: every weight tensor should have changed");
    }
}
