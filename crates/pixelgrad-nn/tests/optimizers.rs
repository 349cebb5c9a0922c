//! Each optimizer's update checked against the formula computed by hand on the host.

use pixelgrad_conformance::reference_device;
use pixelgrad_core::{Device, Param, Result, Tensor};
use pixelgrad_nn::optim::{Adam, RmsProp, Sgd};
use pixelgrad_nn::{Mode, Module, Optimizer, OptimizerKind};

/// A module with one parameter `w`; its loss `sum(w * c)` has gradient `c`.
struct One {
    w: Param,
}

impl Module for One {
    fn forward(&self, x: &Tensor, _m: Mode) -> Result<Tensor> {
        self.w.tensor().mul(x)?.sum_all()
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        f("w", &self.w);
    }
    fn describe(&self) -> String {
        "One".into()
    }
}

fn setup(w: &[f64]) -> (Device, One) {
    let dev = reference_device();
    let w = Param::new(Tensor::from_f64(&dev, w, [w.len()]).unwrap());
    (dev, One { w })
}

/// Runs `steps` optimizer steps with gradient `g` and returns the parameter.
fn run(opt: &mut dyn Optimizer, w0: &[f64], g: &[f64], steps: usize) -> Vec<f64> {
    let (dev, m) = setup(w0);
    let c = Tensor::from_f64(&dev, g, [g.len()]).unwrap();
    for _ in 0..steps {
        m.forward(&c, Mode::Train).unwrap().backward().unwrap();
        opt.step(&m).unwrap();
        assert!(m.w.grad().is_none(), "step must clear the gradient");
    }
    m.w.tensor().to_vec_f64().unwrap()
}

fn close(a: &[f64], b: &[f64]) {
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn sgd_plain_momentum_nesterov_weight_decay() {
    close(&run(&mut Sgd::new(0.1), &[1.0, -2.0], &[0.5, 1.0], 2), &[0.9, -2.2]);
    // momentum 0.9: v1 = g, v2 = 1.9 g; p = p0 - lr (g + 1.9 g)
    close(&run(&mut Sgd::new(0.1).momentum(0.9), &[1.0], &[1.0], 2), &[1.0 - 0.1 * 2.9]);
    // nesterov: d1 = g + 0.9 g = 1.9, v1 = 1; d2 = g + 0.9 * 1.9 = 2.71
    close(&run(&mut Sgd::new(0.1).momentum(0.9).nesterov(true), &[1.0], &[1.0], 2), &[1.0 - 0.1 * (1.9 + 2.71)]);
    // weight decay 0.5 adds 0.5 p to the gradient: 2 - 0.1 (1 + 1) = 1.8
    close(&run(&mut Sgd::new(0.1).weight_decay(0.5), &[2.0], &[1.0], 1), &[1.8]);
}

#[test]
fn adam_and_adamw() {
    // First Adam step moves every coordinate by lr (m/c1 = g, sqrt(v/c2) = |g|).
    close(&run(&mut Adam::new(0.01), &[1.0, 1.0], &[3.0, -0.2], 1), &[0.99, 1.01]);
    // Two steps with a constant gradient: still exactly lr per step.
    close(&run(&mut Adam::new(0.01), &[0.0], &[5.0], 2), &[-0.02]);
    // AdamW decays the weight first: p (1 - lr wd) - lr
    close(&run(&mut Adam::adamw(0.1, 0.5), &[2.0], &[1.0], 1), &[2.0 * (1.0 - 0.05) - 0.1]);
}

#[test]
fn rmsprop() {
    // s = 0.1 g^2, step = lr g / (sqrt(s) + eps) = lr / sqrt(0.1) for g > 0
    close(&run(&mut RmsProp::new(0.01), &[0.0], &[2.0], 1), &[-0.01 / 0.1f64.sqrt()]);
}

#[test]
fn optimizer_names_parse() {
    for n in ["sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop"] {
        let o = OptimizerKind::parse(n).unwrap().build(0.1);
        assert_eq!(o.lr(), 0.1);
    }
    let e = OptimizerKind::parse("lbfgs").err().unwrap().to_string();
    assert!(e.contains("lbfgs") && e.contains("adam"), "{e}");
}

#[test]
fn gradients_accumulate_until_cleared() {
    let (dev, m) = setup(&[0.0, 0.0]);
    let c = Tensor::from_f64(&dev, &[1.0, 2.0], [2]).unwrap();
    m.forward(&c, Mode::Train).unwrap().backward().unwrap();
    m.forward(&c, Mode::Train).unwrap().backward().unwrap();
    assert_eq!(m.w.grad().unwrap().to_vec_f64().unwrap(), vec![2.0, 4.0]);
    m.zero_grad();
    assert!(m.w.grad().is_none());
    // no_grad: nothing recorded, backward refuses
    let _g = pixelgrad_core::no_grad();
    let y = m.forward(&c, Mode::Train).unwrap();
    assert!(!y.requires_grad());
    assert!(y.backward().is_err());
}
