//! Finite-difference gradient checks (f64, on the CPU reference backend) for every layer:
//! input gradients through `check_gradients`, parameter gradients by perturbing each element
//! of each parameter.

use pixelgrad_conformance::reference_device;
use pixelgrad_core::{Device, Result, Tensor};
use pixelgrad_nn::layers::*;
use pixelgrad_nn::{Init, Mode, Module};

/// Deterministic inputs in [-1, 1] without ties.
fn values(n: usize, salt: u64) -> Vec<f64> {
    (0..n).map(|i| (pixelgrad_core::rng::uniform(salt, i as u64) as f64) * 2.0 - 1.0).collect()
}

/// `sum(layer(x) * r)` for a fixed random `r`, so every output element matters.
fn probe(dev: &Device, layer: &dyn Module, x: &Tensor, mode: Mode) -> Result<Tensor> {
    let y = layer.forward(x, mode)?;
    let r = Tensor::from_f64(dev, &values(y.numel(), 99), y.shape().clone())?;
    y.mul(&r)?.sum_all()
}

/// Central difference of `loss(v)` with respect to element `i` of `v`.
fn numeric(v: &[f64], i: usize, loss: &dyn Fn(&[f64]) -> f64) -> f64 {
    let eps = 1e-6;
    let mut w = v.to_vec();
    w[i] = v[i] + eps;
    let up = loss(&w);
    w[i] = v[i] - eps;
    let down = loss(&w);
    (up - down) / (2.0 * eps)
}

fn assert_close(what: &str, analytic: &[f64], v: &[f64], loss: &dyn Fn(&[f64]) -> f64) {
    assert_eq!(analytic.len(), v.len(), "{what}: gradient length");
    for (i, &a) in analytic.iter().enumerate() {
        let n = numeric(v, i, loss);
        let err = (a - n).abs() / (1.0 + n.abs());
        assert!(err < 1e-6, "{what}[{i}]: autodiff {a} vs numeric {n}");
    }
}

fn check_layer(layer: &dyn Module, x_shape: &[usize], mode: Mode) {
    let dev = match layer_device(layer) {
        Some(d) => d,
        None => reference_device(),
    };
    let xs = values(x_shape.iter().product(), 7);
    let x = Tensor::from_f64(&dev, &xs, x_shape).unwrap().with_grad();
    layer.zero_grad();
    probe(&dev, layer, &x, mode).unwrap().backward().unwrap();
    // input gradient
    let gx = x.grad().expect("input received no gradient").to_vec_f64().unwrap();
    let loss_x = |v: &[f64]| {
        let t = Tensor::from_f64(&dev, v, x_shape).unwrap();
        probe(&dev, layer, &t, mode).unwrap().to_vec_f64().unwrap()[0]
    };
    assert_close(&format!("{} input", layer.describe()), &gx, &xs, &loss_x);
    // parameter gradients
    let x = x.detach();
    layer.visit_params(&mut |name, p| {
        let g = p.grad().expect("parameter received no gradient").to_vec_f64().unwrap();
        let base = p.tensor().to_vec_f64().unwrap();
        let loss_p = |v: &[f64]| {
            p.set(&Tensor::from_f64(&dev, v, p.shape()).unwrap()).unwrap();
            probe(&dev, layer, &x, mode).unwrap().to_vec_f64().unwrap()[0]
        };
        assert_close(&format!("{} {name}", layer.describe()), &g, &base, &loss_p);
        p.set(&Tensor::from_f64(&dev, &base, p.shape()).unwrap()).unwrap();
    });
}

/// The device a layer's parameters live on (layers without parameters work anywhere).
fn layer_device(layer: &dyn Module) -> Option<Device> {
    let mut d = None;
    layer.visit_params(&mut |_, p| d = Some(p.device()));
    d
}

#[test]
fn linear() {
    let dev = reference_device();
    check_layer(&Linear::new(&dev, 5, 3, &mut Init::new(1)).unwrap(), &[4, 5], Mode::Train);
}

#[test]
fn conv2d_stride_and_padding() {
    let dev = reference_device();
    check_layer(&Conv2d::new(&dev, 2, 3, 3, 1, 1, &mut Init::new(2)).unwrap(), &[2, 2, 5, 5], Mode::Train);
    check_layer(&Conv2d::new(&dev, 1, 2, 3, 2, 0, &mut Init::new(3)).unwrap(), &[1, 1, 7, 6], Mode::Train);
}

#[test]
fn pools_and_flatten() {
    check_layer(&MaxPool2d::new(2), &[2, 3, 4, 4], Mode::Train);
    check_layer(&MaxPool2d { kernel: 3, stride: 2, padding: 1 }, &[1, 2, 5, 5], Mode::Train);
    check_layer(&AvgPool2d::new(2), &[2, 3, 4, 6], Mode::Train);
    check_layer(&Flatten, &[2, 3, 2, 2], Mode::Train);
}

#[test]
fn batch_norm_train_and_eval() {
    let dev = reference_device();
    check_layer(&BatchNorm::new_1d(&dev, 3).unwrap(), &[5, 3], Mode::Train);
    check_layer(&BatchNorm::new_2d(&dev, 2).unwrap(), &[3, 2, 2, 2], Mode::Train);
    check_layer(&BatchNorm::new_2d(&dev, 2).unwrap(), &[3, 2, 2, 2], Mode::Eval);
}

#[test]
fn activations() {
    for a in [Activation::Relu, Activation::LeakyRelu(0.1), Activation::Sigmoid, Activation::Tanh, Activation::Gelu, Activation::Softmax] {
        check_layer(&a, &[3, 4], Mode::Train);
    }
}

#[test]
fn dropout_masks_and_scales() {
    let dev = reference_device();
    let d = Dropout::new(0.5, 11).unwrap();
    let x = Tensor::ones(&dev, [1000]).unwrap().with_grad();
    let y = d.forward(&x, Mode::Train).unwrap();
    let yv = y.to_vec_f64().unwrap();
    assert!(yv.iter().all(|&v| v == 0.0 || v == 2.0));
    let kept = yv.iter().filter(|&&v| v == 2.0).count();
    assert!((400..600).contains(&kept), "kept {kept} of 1000 at p = 0.5");
    // gradient is the same mask and scale
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec_f64().unwrap(), yv);
    // evaluation is the identity; a second training call draws a new mask
    assert_eq!(d.forward(&x, Mode::Eval).unwrap().to_vec_f64().unwrap(), vec![1.0; 1000]);
    assert_ne!(d.forward(&x, Mode::Train).unwrap().to_vec_f64().unwrap(), yv);
    assert!(Dropout::new(1.0, 0).is_err());
}

#[test]
fn batch_norm_running_statistics() {
    let dev = reference_device();
    let bn = BatchNorm::new_1d(&dev, 2).unwrap();
    let x = Tensor::from_f64(&dev, &[1.0, 10.0, 3.0, 20.0], [2, 2]).unwrap();
    let y = bn.forward(&x, Mode::Train).unwrap().to_vec_f64().unwrap();
    // per-channel mean 2 and 15, biased var 1 and 25: outputs are -1, +1 (up to eps)
    for (g, e) in y.iter().zip([-1.0, -1.0, 1.0, 1.0]) {
        assert!((g - e).abs() < 1e-4, "{y:?}");
    }
    // running = 0.9 * init + 0.1 * batch (unbiased var: 2 and 50); momentum is an f32 scalar
    let rm = bn.running_mean.get().to_vec_f64().unwrap();
    let rv = bn.running_var.get().to_vec_f64().unwrap();
    assert!((rm[0] - 0.2).abs() < 1e-6 && (rm[1] - 1.5).abs() < 1e-6, "{rm:?}");
    assert!((rv[0] - (0.9 + 0.2)).abs() < 1e-6 && (rv[1] - (0.9 + 5.0)).abs() < 1e-6, "{rv:?}");
    // eval uses the running statistics
    let e = bn.forward(&x, Mode::Eval).unwrap().to_vec_f64().unwrap();
    assert!((e[0] - (1.0 - 0.2) / (1.1f64 + 1e-5).sqrt()).abs() < 1e-6);
}

#[test]
fn wrong_input_shapes_are_typed_errors() {
    let dev = reference_device();
    let l = Linear::new(&dev, 4, 2, &mut Init::new(0)).unwrap();
    let e = l.forward(&Tensor::ones(&dev, [3, 5]).unwrap(), Mode::Eval).unwrap_err().to_string();
    assert!(e.contains("linear") && e.contains("[3, 5]") && e.contains("[N, 4]"), "{e}");
    let c = Conv2d::new(&dev, 3, 2, 3, 1, 0, &mut Init::new(0)).unwrap();
    let e = c.forward(&Tensor::ones(&dev, [1, 1, 5, 5]).unwrap(), Mode::Eval).unwrap_err().to_string();
    assert!(e.contains("conv2d") && e.contains("[1, 1, 5, 5]"), "{e}");
    let e = MaxPool2d::new(4).forward(&Tensor::ones(&dev, [1, 1, 2, 2]).unwrap(), Mode::Eval).unwrap_err().to_string();
    assert!(e.contains("max_pool2d"), "{e}");
}
