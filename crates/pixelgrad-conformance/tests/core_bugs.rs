//! Gradient bugs found in core's composites and rules, kept as regression tests. Each test
//! states the mathematically correct answer. The bce-at-0 and max-ties bugs were fixed in core
//! (commit 7dea91d); issues not fixed yet are `#[ignore]`d with the reason, so the suite stays
//! green while they stay visible (`cargo test -- --ignored`).

use pixelgrad_conformance::{check_gradients, reference_device};
use pixelgrad_core::composite::bce_with_logits;
use pixelgrad_core::{Shape, Tensor};

/// `bce_with_logits(x, t) = softplus(x) - x t` is smooth everywhere, with
/// `d/dx = (sigmoid(x) - t) / N`, so at `x = 0` the gradient is `(0.5 - t) / N`.
/// Core used to write softplus as `relu(x) + log(1 + exp(-|x|))`; at exactly 0 both `relu'`
/// and `|x|'` are taken as 0, so autodiff returned `-t / N`, off by `0.5 / N`. Zero logits are
/// common (a zero-initialised output layer gives them at step 0).
/// (Alternative fix, checked below: write `-|x|` as `x.minimum(&x.neg()?)?`.)
#[test]
fn bce_with_logits_gradient_at_zero_logits() {
    let t = [0.0, 1.0, 0.25, 0.75];
    let err = check_gradients(
        |x| {
            let tt = Tensor::from_f64(x[0].device(), &t, [4])?;
            bce_with_logits(&x[0], &tt)
        },
        &[vec![0.0; 4]],
        &[Shape::from([4])],
    )
    .unwrap();
    assert!(err < 1e-6, "max gradient error {err:.3e} at zero logits");
}

/// Same check without autodiff's help: the gradient must equal `(sigmoid(0) - t) / N`.
#[test]
fn bce_with_logits_gradient_value_at_zero() {
    let dev = reference_device();
    let x = Tensor::from_f64(&dev, &[0.0, 0.0], [2]).unwrap().with_grad();
    let t = Tensor::from_f64(&dev, &[0.0, 1.0], [2]).unwrap();
    bce_with_logits(&x, &t).unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_vec_f64().unwrap();
    assert_eq!(g, vec![0.25, -0.25]);
}

/// `max` over a row with ties: any valid (sub)gradient has entries summing to 1 (moving
/// every element by `e` moves the max by `e`). Core's rule gives every tied position the full
/// gradient used to give every tied position the full gradient, so a row of k equal values got
/// a gradient summing to k (max pooling over flat regions scaled input gradients by up to
/// kh*kw). Core now divides the mask by its count.
#[test]
fn max_with_ties_gradient_is_a_subgradient() {
    let dev = reference_device();
    let x = Tensor::from_f64(&dev, &[1.0, 1.0, 0.5], [1, 3]).unwrap().with_grad();
    x.max_axis(1, false).unwrap().sum_all().unwrap().backward().unwrap();
    let g = x.grad().unwrap().to_vec_f64().unwrap();
    let total: f64 = g.iter().sum();
    assert!((total - 1.0).abs() < 1e-12, "gradient {g:?} sums to {total}");
}

/// The proposed fix for `bce_with_logits`, written here with core ops: it is correct at 0 and
/// everywhere else (checked by finite differences).
fn bce_fixed(x: &Tensor, t: &Tensor) -> pixelgrad_core::Result<Tensor> {
    let neg_abs = x.minimum(&x.neg()?)?; // -|x|, with d/dx = 1 at the tie x = 0
    let soft = neg_abs.exp()?.add_scalar(1.0)?.log()?;
    x.relu()?.sub(&x.mul(t)?)?.add(&soft)?.mean_all()
}

#[test]
fn proposed_bce_fix_is_right_at_zero_and_elsewhere() {
    let dev = reference_device();
    let x = Tensor::from_f64(&dev, &[0.0, 0.0], [2]).unwrap().with_grad();
    let t = Tensor::from_f64(&dev, &[0.0, 1.0], [2]).unwrap();
    bce_fixed(&x, &t).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec_f64().unwrap(), vec![0.25, -0.25]);
    let tv = [0.0, 1.0, 0.25, 0.75, 0.5, 0.1];
    for xs in [vec![0.0; 6], vec![-3.0, -0.5, 0.0, 0.2, 1.5, 4.0]] {
        let err = check_gradients(
            |x| bce_fixed(&x[0], &Tensor::from_f64(x[0].device(), &tv, [6])?),
            std::slice::from_ref(&xs),
            &[Shape::from([6])],
        )
        .unwrap();
        assert!(err < 1e-6, "{err}");
        // Same values as core's version.
        let a = bce_fixed(&Tensor::from_f64(&dev, &xs, [6]).unwrap(), &Tensor::from_f64(&dev, &tv, [6]).unwrap()).unwrap();
        let b = bce_with_logits(&Tensor::from_f64(&dev, &xs, [6]).unwrap(), &Tensor::from_f64(&dev, &tv, [6]).unwrap()).unwrap();
        assert!((a.to_vec_f64().unwrap()[0] - b.to_vec_f64().unwrap()[0]).abs() < 1e-15);
    }
}

/// The proposed fix for max with ties: the mask divided by its count.
#[test]
fn proposed_max_tie_fix_gives_a_subgradient() {
    let dev = reference_device();
    let x = Tensor::from_f64(&dev, &[1.0, 1.0, 0.5, 2.0, 0.0, 2.0], [2, 3]).unwrap().with_grad();
    let y = x.max_axis(1, true).unwrap().detach();
    let m = x.eq(&y).unwrap();
    let w = m.div(&m.sum_axis(1, true).unwrap()).unwrap();
    // d/dx sum(max) through the fixed rule = w.
    assert_eq!(w.to_vec_f64().unwrap(), vec![0.5, 0.5, 0.0, 0.5, 0.0, 0.5]);
}

/// Efficiency, not correctness: core's `backward` computes the gradient of every input of an
/// op, then drops the ones nobody needs. For `x @ w` with constant data `x` (every first layer)
/// that is a full extra matmul per step. Fix in `autodiff.rs`: give `grad_rule` the
/// `requires_grad()` flags of the inputs and skip the rest (or check `x[i].requires_grad()` in
/// each arm before building its gradient).
#[test]
fn backward_skips_gradients_nobody_needs() {
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    let x = Tensor::ones(&dev, [64, 784]).unwrap();
    let w = pixelgrad_core::Param::new(Tensor::ones(&dev, [784, 128]).unwrap());
    let loss = x.matmul(&w.tensor()).unwrap().sum_all().unwrap();
    let before = dev.counters().launches;
    loss.backward().unwrap();
    let launches = dev.counters().launches - before;
    // ones (seed), expand of the sum's gradient, one matmul for dW: 3 launches. Core also
    // launches the matmul for dx.
    assert!(launches <= 3, "{launches} launches for one needed matmul gradient");
}
