//! Finite-difference gradient checks (f64, reference backend) for every primitive and the
//! composites: autodiff's gradient rule must match central differences to ~1e-6.

use pixelgrad_conformance::{check_gradients, families::one_hot, seed_of, Gen};
use pixelgrad_core::composite::{avg_pool2d, bce_with_logits, conv2d, cross_entropy, cross_entropy_one_hot, max_pool2d, mse};
use pixelgrad_core::{AttentionOpts, BinaryOp, NBits, Op, ReduceOp, Result, Shape, Tensor, UnaryOp, Window};

const MAX_ERR: f64 = 1e-6;

/// One check: `f` on inputs drawn from `gens` with `shapes` (seeded by `name`).
fn fd(name: &str, f: impl Fn(&[Tensor]) -> Result<Tensor>, specs: &[(&[usize], Gen)]) {
    let shapes: Vec<Shape> = specs.iter().map(|(s, _)| Shape::from(*s)).collect();
    let inputs: Vec<Vec<f64>> =
        specs.iter().enumerate().map(|(i, (s, g))| g.values(seed_of(&format!("fd/{name}/{i}")), Shape::from(*s).numel())).collect();
    let err = check_gradients(f, &inputs, &shapes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(err < MAX_ERR, "{name}: max gradient error {err:.3e} >= {MAX_ERR:.0e}");
}

fn sym() -> Gen {
    Gen::Uniform(-2.0, 2.0)
}
fn pos() -> Gen {
    Gen::Uniform(0.3, 3.0)
}

/// A constant tensor on the device of `like`.
fn constant(like: &Tensor, data: &[f64], shape: &[usize]) -> Result<Tensor> {
    Tensor::from_f64(like.device(), data, shape.to_vec())
}

#[test]
fn unary_ops() {
    use UnaryOp as U;
    let list: Vec<(&str, UnaryOp, Gen)> = vec![
        ("neg", U::Neg, sym()),
        ("exp", U::Exp, sym()),
        ("log", U::Log, pos()),
        ("sqrt", U::Sqrt, pos()),
        ("recip", U::Recip, pos()),
        ("tanh", U::Tanh, sym()),
        ("sigmoid", U::Sigmoid, sym()),
        ("abs", U::Abs, sym()),
        ("sin", U::Sin, sym()),
        ("cos", U::Cos, sym()),
        ("affine", U::Affine { mul: -1.5, add: 0.25 }, sym()),
        ("powf_3", U::Powf(3.0), sym()),
        ("powf_2_5", U::Powf(2.5), pos()),
        ("powf_minus_0_5", U::Powf(-0.5), pos()),
        ("max_scalar", U::MaxScalar(0.1), sym()),
        ("min_scalar", U::MinScalar(-0.2), sym()),
        ("gt_scalar", U::GtScalar(0.3), sym()),
        ("div_scalar", U::DivScalar(-3.0), sym()),
    ];
    for (name, op, g) in list {
        fd(name, move |x| x[0].unary(op), &[(&[4, 5], g)]);
    }
}

/// Inputs a unary function's gradient is checked on. Exhaustive: a new variant does not
/// compile until it says where its derivative exists.
fn unary_domain(op: UnaryOp) -> Gen {
    match op {
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Recip => pos(),
        // Fractional powers need positive bases.
        UnaryOp::Powf(p) if p.fract() != 0.0 => pos(),
        UnaryOp::Neg
        | UnaryOp::Exp
        | UnaryOp::Tanh
        | UnaryOp::Sigmoid
        | UnaryOp::Abs
        | UnaryOp::Square
        | UnaryOp::Floor
        | UnaryOp::RoundEven
        | UnaryOp::Sin
        | UnaryOp::Cos
        | UnaryOp::Affine { .. }
        | UnaryOp::Powf(_)
        | UnaryOp::MaxScalar(_)
        | UnaryOp::MinScalar(_)
        | UnaryOp::GtScalar(_)
        | UnaryOp::DivScalar(_) => sym(),
    }
}

/// Inputs of both operands of a binary function's gradient check (exhaustive, as above).
fn binary_domain(op: BinaryOp) -> (Gen, Gen) {
    match op {
        BinaryOp::Div => (sym(), pos()),
        BinaryOp::Pow => (pos(), sym()),
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Max | BinaryOp::Min | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq => {
            (sym(), sym())
        }
    }
}

/// Every variant of the elementwise table, so a new function gets its gradient rule checked
/// without anyone adding a case by hand.
#[test]
fn every_elementwise_variant() {
    for op in UnaryOp::ALL {
        fd(&format!("all/{}", op.name()), move |x| x[0].unary(op), &[(&[3, 4], unary_domain(op))]);
    }
    for op in BinaryOp::ALL {
        let (ga, gb) = binary_domain(op);
        fd(&format!("all/{}", op.name()), move |x| x[0].binary(op, &x[1]), &[(&[3, 4], ga), (&[4], gb)]);
    }
}

#[test]
fn binary_ops() {
    use BinaryOp as B;
    let list: Vec<(&str, BinaryOp, Gen, Gen)> = vec![
        ("add", B::Add, sym(), sym()),
        ("sub", B::Sub, sym(), sym()),
        ("mul", B::Mul, sym(), sym()),
        ("div", B::Div, sym(), pos()),
        ("max", B::Max, sym(), sym()),
        ("min", B::Min, sym(), sym()),
        ("pow", B::Pow, pos(), sym()),
        ("gt", B::Gt, sym(), sym()),
    ];
    let shapes: &[(&[usize], &[usize])] = &[(&[3, 4], &[3, 4]), (&[3, 4], &[4]), (&[2, 1], &[1, 3]), (&[], &[2, 3])];
    for (name, op, ga, gb) in list {
        for (sa, sb) in shapes {
            fd(&format!("{name}_{sa:?}_{sb:?}"), move |x| x[0].binary(op, &x[1]), &[(sa, ga.clone()), (sb, gb.clone())]);
        }
    }
}

#[test]
fn where_op() {
    fd(
        "where",
        |x| {
            let c = constant(&x[0], &Gen::Mask.values(5, 12), &[3, 4])?;
            Tensor::select(&c, &x[0], &x[1])
        },
        &[(&[3, 4], sym()), (&[4], sym())],
    );
}

#[test]
fn reductions() {
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::LogSumExp] {
        for axis in 0..3 {
            fd(
                &format!("{op:?}_axis{axis}"),
                move |x| Tensor::apply(x[0].device(), Op::Reduce { op, axis }, &[&x[0]]),
                &[(&[3, 4, 5], sym())],
            );
        }
    }
}

#[test]
fn matmul_all_transposes_and_batches() {
    let (m, k, n) = (3, 4, 5);
    for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
        let da: Vec<usize> = if ta { vec![k, m] } else { vec![m, k] };
        let db: Vec<usize> = if tb { vec![n, k] } else { vec![k, n] };
        for (pa, pb) in [(None, None), (Some(2), Some(2)), (Some(1), Some(2)), (None, Some(2)), (Some(2), None)] {
            let mut a = da.clone();
            let mut b = db.clone();
            if let Some(p) = pa {
                a.insert(0, p);
            }
            if let Some(p) = pb {
                b.insert(0, p);
            }
            fd(&format!("matmul_{a:?}_{ta}_{b:?}_{tb}"), move |x| x[0].matmul_t(&x[1], ta, tb), &[(&a, sym()), (&b, sym())]);
        }
    }
}

/// The gradient for `a` of a product with packed block-quantised weights (4- and 8-bit, `k`
/// not a multiple of the block), and of its transposed form, read from the packed weight.
#[test]
fn matmul_nbits_gradient_for_a() {
    use pixelgrad_conformance::families::packed_weight;
    for (bits, block, k, n) in [(4, 16, 21, 3), (8, 16, 16, 4), (4, 32, 40, 2)] {
        let g = NBits { bits, block, k };
        let p = packed_weight(g, n);
        let kb = g.k_blocks();
        for trans in [false, true] {
            let p = &p;
            let f = move |x: &[Tensor]| {
                let dev = x[0].device();
                let q = Tensor::from_u8(dev, &p.q, [n, kb * g.blob()])?;
                let s = Tensor::from_vec(dev, &p.scales, [n, kb])?;
                let z = Tensor::from_vec(dev, &p.zeros, [n, kb])?;
                x[0].matmul_nbits(&q, &s, &z, g, trans)
            };
            let a: &[usize] = if trans { &[3, n] } else { &[3, k] };
            fd(&format!("matmul_nbits_{bits}_{block}_{k}_{trans}"), f, &[(a, sym())]);
        }
    }
}

#[test]
fn windows() {
    let w = Window { kh: 2, kw: 3, stride_h: 1, stride_w: 2, pad_h: 1, pad_w: 1 };
    fd("im2col", move |x| x[0].im2col(w), &[(&[2, 2, 4, 5], sym())]);
    let (oh, ow) = w.out_hw(4, 5).unwrap();
    fd("col2im", move |x| x[0].col2im(w, 4, 5), &[(&[2, 2 * 6, oh * ow], sym())]);
    let sq = Window::square(3, 2, 0);
    fd("im2col_k3s2", move |x| x[0].im2col(sq), &[(&[1, 2, 7, 7], sym())]);
    fd("depthwise_conv", move |x| x[0].depthwise_conv(&x[1], w), &[(&[2, 3, 4, 5], sym()), (&[3, 1, 2, 3], sym())]);
    fd("depthwise_conv_k3s2", move |x| x[0].depthwise_conv(&x[1], sq), &[(&[1, 2, 7, 7], sym()), (&[2, 1, 3, 3], sym())]);
}

#[test]
fn indexing() {
    fd(
        "gather_axis1",
        |x| {
            let idx = constant(&x[0], &Gen::Indices(5).values(1, 12), &[3, 4])?;
            x[0].gather(1, &idx)
        },
        &[(&[3, 5], sym())],
    );
    fd(
        "gather_axis0",
        |x| {
            let idx = constant(&x[0], &Gen::Indices(3).values(2, 20), &[4, 5])?;
            x[0].gather(0, &idx)
        },
        &[(&[3, 5], sym())],
    );
    fd(
        "scatter_add",
        |x| {
            let idx = constant(&x[0], &Gen::Indices(4).values(3, 15), &[3, 5])?;
            x[0].scatter_add(1, 4, &idx)
        },
        &[(&[3, 5], sym())],
    );
}

#[test]
fn movement() {
    fd("reshape", |x| x[0].reshape([6, 2])?.mul(&x[1]), &[(&[3, 4], sym()), (&[6, 2], sym())]);
    fd("permute", |x| x[0].permute(&[2, 0, 1]), &[(&[2, 3, 4], sym())]);
    fd("expand", |x| x[0].broadcast_to([2, 3, 4]), &[(&[3, 1], sym())]);
    fd(
        "slice",
        |x| Tensor::apply(x[0].device(), Op::Slice { starts: vec![1, 0, 2], ends: vec![3, 2, 4] }, &[&x[0]]),
        &[(&[3, 3, 5], sym())],
    );
    fd("pad", |x| x[0].pad(&[1, 0], &[0, 2]), &[(&[3, 4], sym())]);
    fd("concat", |x| Tensor::concat(&[&x[0], &x[1], &x[2]], 1), &[(&[2, 3], sym()), (&[2, 1], sym()), (&[2, 2], sym())]);
    // Fill and random take no inputs; added to x they must pass its gradient through untouched.
    fd(
        "fill_and_random",
        |x| x[0].add(&Tensor::rand_normal(x[0].device(), [3, 4], 0.0, 1.0, 9)?)?.mul(&Tensor::full(x[0].device(), [4], 2.0)?),
        &[(&[3, 4], sym())],
    );
}

#[test]
fn activations() {
    fd("relu", |x| x[0].relu(), &[(&[4, 6], sym())]);
    fd("leaky_relu", |x| x[0].leaky_relu(0.2), &[(&[4, 6], sym())]);
    fd("gelu", |x| x[0].gelu(), &[(&[4, 6], sym())]);
    fd("sigmoid", |x| x[0].sigmoid(), &[(&[4, 6], sym())]);
    fd("tanh", |x| x[0].tanh(), &[(&[4, 6], sym())]);
    fd("softmax", |x| x[0].softmax(-1), &[(&[3, 5], sym())]);
    fd("softmax_axis0", |x| x[0].softmax(0), &[(&[3, 5], sym())]);
    fd("log_softmax", |x| x[0].log_softmax(1), &[(&[3, 5], sym())]);
    fd("var_axis", |x| x[0].var_axis(1, true), &[(&[3, 5], sym())]);
}

#[test]
fn conv_and_pools() {
    fd("conv2d_s1p1_bias", |x| conv2d(&x[0], &x[1], Some(&x[2]), 1, 1), &[(&[1, 2, 5, 5], sym()), (&[3, 2, 3, 3], sym()), (&[3], sym())]);
    fd("conv2d_s2p0", |x| conv2d(&x[0], &x[1], None, 2, 0), &[(&[2, 2, 5, 4], sym()), (&[2, 2, 2, 2], sym())]);
    fd("max_pool2d_k2s2", |x| max_pool2d(&x[0], 2, 2, 0), &[(&[1, 2, 4, 6], sym())]);
    fd("max_pool2d_k3s2p1", |x| max_pool2d(&x[0], 3, 2, 1), &[(&[1, 2, 5, 5], sym())]);
    fd("avg_pool2d_k2s2", |x| avg_pool2d(&x[0], 2, 2, 0), &[(&[1, 2, 4, 6], sym())]);
    fd("avg_pool2d_k3s1p1", |x| avg_pool2d(&x[0], 3, 1, 1), &[(&[1, 1, 4, 4], sym())]);
    // The one-pass primitive (a window program) and its gradient program.
    fd("avg_pool_k3s1p1", |x| x[0].avg_pool(Window::square(3, 1, 1)), &[(&[1, 1, 4, 4], sym())]);
    let odd = Window { kh: 3, kw: 2, stride_h: 2, stride_w: 1, pad_h: 1, pad_w: 1 };
    fd("avg_pool_k3x2_s2x1_p1", move |x| x[0].avg_pool(odd), &[(&[1, 2, 5, 4], sym())]);
}

#[test]
fn losses() {
    fd("mse", |x| mse(&x[0], &x[1]), &[(&[4, 3], sym()), (&[4, 3], sym())]);
    fd(
        "cross_entropy_class_index",
        |x| {
            let y = constant(&x[0], &Gen::Indices(4).values(4, 5), &[5])?;
            cross_entropy(&x[0], &y)
        },
        &[(&[5, 4], sym())],
    );
    fd(
        "cross_entropy_one_hot",
        |x| {
            let Gen::Values(v) = one_hot(5, 4) else { unreachable!() };
            let t = constant(&x[0], &v, &[5, 4])?;
            cross_entropy_one_hot(&x[0], &t)
        },
        &[(&[5, 4], sym())],
    );
    fd(
        "bce_with_logits",
        |x| {
            let t = constant(&x[0], &Gen::Uniform(0.0, 1.0).values(6, 12), &[4, 3])?;
            bce_with_logits(&x[0], &t)
        },
        &[(&[4, 3], Gen::Uniform(-4.0, 4.0))],
    );
}

#[test]
fn image_composites() {
    use pixelgrad_core::composite::topk;
    use pixelgrad_image::{preprocess, resize, yuv_to_rgb};
    use pixelgrad_image::{yuv::YuvMatrix, Antialias, Fit, Layout, PixelSpec};
    let px = Gen::Uniform(0.0, 1.0);
    fd("resize_down_antialiased", |x| resize(&x[0], 2, 3, Antialias::Auto), &[(&[1, 2, 7, 9], px.clone())]);
    fd("resize_up", |x| resize(&x[0], 5, 7, Antialias::Never), &[(&[1, 1, 3, 4], sym())]);
    let spec =
        PixelSpec { size: Some((4, 5)), fit: Fit::Contain, layout: Layout::Nhwc, channels: 1, pad: [0.3; 4], ..PixelSpec::default() };
    fd("preprocess_contain_luma", |x| Ok(preprocess(&x[0], &spec)?.0), &[(&[1, 3, 6, 11], px.clone())]);
    let m = YuvMatrix::bt709(false);
    // inputs away from the clamp at 0 and 1, where the derivative jumps
    fd(
        "yuv_to_rgb",
        |x| yuv_to_rgb(&x[0], &x[1], &x[2], &m),
        &[(&[3, 4], Gen::Uniform(100.0, 140.0)), (&[2, 2], Gen::Uniform(120.0, 136.0)), (&[2, 2], Gen::Uniform(120.0, 136.0))],
    );
    fd("topk_values", |x| Ok(topk(&x[0], 3)?.0), &[(&[2, 6], sym())]);
}

/// The checker itself must catch a wrong gradient: `x.detach() * x` has true derivative `2x`
/// but autodiff only sees the second factor (`x`).
#[test]
fn checker_catches_a_wrong_gradient() {
    let err = check_gradients(|x| x[0].detach().mul(&x[0]), &[vec![1.0, -2.0, 3.0]], &[Shape::from([3])]).unwrap();
    assert!(err > 0.1, "{err}");
    // And bad arguments are typed errors.
    assert!(check_gradients(|x| Ok(x[0].clone()), &[vec![1.0]], &[Shape::from([2])]).is_err());
}

/// The fused attention op's gradient (the composition's, recomputing the scores) for the
/// queries, keys, values and a learned additive bias: grouped key/value heads, `Hv != H`, a
/// bias broadcast over the batch, and one query row.
#[test]
fn fused_attention() {
    // (b, n, nkv, s, t, h, hv)
    for (b, n, nkv, s, t, h, hv) in [(2, 4, 2, 3, 5, 4, 3), (1, 2, 1, 1, 6, 3, 5)] {
        let f = move |x: &[Tensor]| x[0].attention_fused(&x[1], &x[2], Some(&x[3]), AttentionOpts::scaled(0.7));
        let name = format!("attention_{b}_{n}_{nkv}_{s}_{t}_{h}_{hv}");
        let specs: [(&[usize], Gen); 4] =
            [(&[b, n, s, h], sym()), (&[b, nkv, t, h], sym()), (&[b, nkv, t, hv], sym()), (&[1, n, s, t], sym())];
        fd(&name, f, &specs);
        // without a mask
        let f = move |x: &[Tensor]| x[0].attention_fused(&x[1], &x[2], None, AttentionOpts::scaled(0.7));
        fd(&format!("{name}_unmasked"), f, &specs[..3]);
    }
}

/// The fused attention op's gradient with its options: causal exclusion at an offset (and a
/// sliding window), the softcap before and after a learned mask, the smooth softmax; grouped
/// heads and one query row (a decoder's step).
#[test]
fn fused_attention_options() {
    let o = AttentionOpts::scaled(0.7);
    let cases = [
        ("causal", AttentionOpts { causal: Some(2), ..o }),
        ("causal_window", AttentionOpts { causal: Some(1), window: Some(2), ..o }),
        ("softcap_before", AttentionOpts { softcap: Some(1.5), ..o }),
        ("softcap_after", AttentionOpts { softcap: Some(1.5), softcap_after_masks: true, ..o }),
        ("smooth", AttentionOpts { smooth: true, ..o }),
        ("all", AttentionOpts { causal: Some(2), softcap: Some(2.0), smooth: true, ..o }),
    ];
    for (b, n, nkv, s, t, h, hv) in [(1, 4, 2, 3, 5, 4, 3), (2, 2, 1, 1, 6, 3, 2)] {
        for (what, opts) in cases {
            let name = format!("attention_{what}_{b}_{n}_{nkv}_{s}_{t}_{h}_{hv}");
            let specs: [(&[usize], Gen); 4] =
                [(&[b, n, s, h], sym()), (&[b, nkv, t, h], sym()), (&[b, nkv, t, hv], sym()), (&[1, n, s, t], sym())];
            let f = move |x: &[Tensor]| x[0].attention_fused(&x[1], &x[2], Some(&x[3]), opts);
            fd(&name, f, &specs);
        }
    }
}
