//! Composites built from primitives in core: activations, softmax, conv / pooling, losses.
//! They need no kernel of their own, but they exercise chains of primitives the way training
//! does, so a backend that passes the primitives one by one can still fail here (e.g. on
//! precision loss through several ops).

use pixelgrad_core::composite::{
    accuracy_count, avg_pool2d, bce_with_logits, conv2d, cross_entropy, cross_entropy_one_hot, max_pool2d, mse,
};
use pixelgrad_core::Device;

use crate::harness::{check_all_with, Case, Gen, Read};
use crate::tolerance::{accumulate, COMPOSITE, EXACT};

type Outcome = std::result::Result<(), String>;

fn sym(a: f64) -> Gen {
    Gen::Uniform(-a, a)
}

/// A one-hot `[n, c]` matrix with the hot class of row `i` at `(3 i + 1) mod c`.
pub fn one_hot(n: usize, c: usize) -> Gen {
    let mut v = vec![0.0; n * c];
    for i in 0..n {
        v[i * c + (3 * i + 1) % c] = 1.0;
    }
    Gen::Values(v)
}

pub async fn composites(dev: &Device, read: Read) -> Outcome {
    let conv_tol = accumulate(3 * 9).scaled(5.0);
    let cases = vec![
        Case::new("composite", "relu", |_, x| x[0].relu()).input([9, 11], sym(2.0)).tol(COMPOSITE),
        Case::new("composite", "leaky_relu", |_, x| x[0].leaky_relu(0.1)).input([9, 11], sym(2.0)).tol(COMPOSITE),
        Case::new("composite", "gelu", |_, x| x[0].gelu()).input([9, 11], sym(3.0)).tol(COMPOSITE),
        Case::new("composite", "softmax_last", |_, x| x[0].softmax(-1)).input([6, 10], sym(3.0)).tol(COMPOSITE),
        Case::new("composite", "softmax_axis0", |_, x| x[0].softmax(0)).input([6, 10], sym(3.0)).tol(COMPOSITE),
        Case::new("composite", "log_softmax", |_, x| x[0].log_softmax(1)).input([6, 10], sym(3.0)).tol(COMPOSITE),
        Case::new("composite", "log_softmax_large_logits", |_, x| x[0].log_softmax(1)).input([4, 7], sym(60.0)).tol(COMPOSITE),
        Case::new("composite", "var_axis", |_, x| x[0].var_axis(1, false)).input([5, 12], sym(2.0)).tol(COMPOSITE),
        Case::new("composite", "conv2d_s1_p1_bias", |_, x| conv2d(&x[0], &x[1], Some(&x[2]), 1, 1))
            .input([2, 3, 8, 8], sym(1.0))
            .input([4, 3, 3, 3], sym(0.5))
            .input([4], sym(0.5))
            .tol(conv_tol)
            .grad_tol(accumulate(2 * 64 * 4).scaled(5.0)),
        Case::new("composite", "conv2d_s2_p0", |_, x| conv2d(&x[0], &x[1], None, 2, 0))
            .input([2, 3, 9, 7], sym(1.0))
            .input([5, 3, 3, 3], sym(0.5))
            .tol(conv_tol)
            .grad_tol(accumulate(2 * 16 * 5).scaled(5.0)),
        Case::new("composite", "max_pool_k2s2", |_, x| max_pool2d(&x[0], 2, 2, 0)).input([2, 3, 8, 6], sym(1.0)).tol(COMPOSITE),
        Case::new("composite", "max_pool_k3s2p1", |_, x| max_pool2d(&x[0], 3, 2, 1)).input([2, 2, 7, 7], sym(1.0)).tol(COMPOSITE),
        Case::new("composite", "avg_pool_k2s2", |_, x| avg_pool2d(&x[0], 2, 2, 0)).input([2, 3, 8, 6], sym(1.0)).tol(COMPOSITE),
        Case::new("composite", "avg_pool_k3s1p1", |_, x| avg_pool2d(&x[0], 3, 1, 1)).input([1, 2, 5, 5], sym(1.0)).tol(COMPOSITE),
        Case::new("composite", "mse", |_, x| mse(&x[0], &x[1])).input([8, 3], sym(1.0)).input([8, 3], sym(1.0)).tol(COMPOSITE),
        Case::new("composite", "cross_entropy", |_, x| cross_entropy(&x[0], &x[1]))
            .input([8, 5], sym(3.0))
            .constant([8], Gen::Indices(5))
            .tol(COMPOSITE),
        Case::new("composite", "cross_entropy_one_hot", |_, x| cross_entropy_one_hot(&x[0], &x[1]))
            .input([8, 5], sym(3.0))
            .constant([8, 5], one_hot(8, 5))
            .tol(COMPOSITE),
        Case::new("composite", "bce_with_logits", |_, x| bce_with_logits(&x[0], &x[1]))
            .input([6, 4], sym(4.0))
            .constant([6, 4], Gen::Uniform(0.0, 1.0))
            .tol(COMPOSITE),
        Case::new("composite", "accuracy_count", |_, x| accuracy_count(&x[0], &x[1]))
            .input([16, 5], sym(3.0))
            .constant([16], Gen::Indices(5))
            .tol(EXACT)
            .forward_only(),
        Case::new("composite", "mean_all", |_, x| x[0].mean_all()).input([7, 9], sym(1.0)).tol(accumulate(63)),
    ];
    check_all_with(dev, &cases, read).await
}
