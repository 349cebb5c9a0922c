//! fill, random, unary, binary (with broadcasting) and where.

use pixelgrad_core::{BinaryOp, Tensor, UnaryOp};

use crate::harness::{check_all_with, Case, Gen, Read};
use crate::tolerance::{ELEMENTWISE, EXACT, TRANSCENDENTAL};
use pixelgrad_core::Device;

type Outcome = std::result::Result<(), String>;

pub async fn fill(dev: &Device, read: Read) -> Outcome {
    let cases = vec![
        Case::new("fill", "full_3x5", |d, _| Tensor::full(d, [3, 5], -1.25)).tol(EXACT),
        Case::new("fill", "scalar", |d, _| Tensor::scalar(d, 7.5)).tol(EXACT),
        Case::new("fill", "zeros_large", |d, _| Tensor::zeros(d, [257, 131])).tol(EXACT),
        Case::new("fill", "empty", |d, _| Tensor::ones(d, [0, 4])).tol(EXACT),
    ];
    check_all_with(dev, &cases, read).await
}

pub async fn random(dev: &Device, read: Read) -> Outcome {
    let cases = vec![
        Case::new("random", "uniform", |d, _| Tensor::rand_uniform(d, [1000], -2.0, 3.0, 42)).tol(ELEMENTWISE),
        Case::new("random", "uniform_big_seed", |d, _| Tensor::rand_uniform(d, [17, 33], 0.0, 1.0, u64::MAX - 5)).tol(ELEMENTWISE),
        Case::new("random", "normal", |d, _| Tensor::rand_normal(d, [1000], 0.5, 2.0, 7)).tol(TRANSCENDENTAL),
        Case::new("random", "normal_large", |d, _| Tensor::rand_normal(d, [260, 130], 0.0, 1.0, 1 << 40)).tol(TRANSCENDENTAL),
    ];
    check_all_with(dev, &cases, read).await
}

fn unary_case(name: &str, op: UnaryOp, gen: Gen) -> Case {
    Case::new("unary", name, move |_, x| x[0].unary(op)).input([37, 29], gen)
}

pub async fn unary(dev: &Device, read: Read) -> Outcome {
    use UnaryOp as U;
    let sym = Gen::Uniform(-2.0, 2.0);
    let pos = Gen::Uniform(0.2, 4.0);
    let list: Vec<(&str, UnaryOp, Gen, bool)> = vec![
        // (name, op, inputs, transcendental?)
        ("neg", U::Neg, sym.clone(), false),
        ("exp", U::Exp, Gen::Uniform(-3.0, 3.0), true),
        ("log", U::Log, pos.clone(), true),
        ("sqrt", U::Sqrt, pos.clone(), true),
        ("recip", U::Recip, Gen::Uniform(0.5, 3.0), true),
        ("tanh", U::Tanh, Gen::Uniform(-3.0, 3.0), true),
        ("sigmoid", U::Sigmoid, Gen::Uniform(-6.0, 6.0), true),
        ("abs", U::Abs, sym.clone(), false),
        ("sin", U::Sin, Gen::Uniform(-3.0, 3.0), true),
        ("cos", U::Cos, Gen::Uniform(-3.0, 3.0), true),
        ("affine", U::Affine { mul: 1.5, add: -0.25 }, sym.clone(), false),
        ("powf_2_negative_base", U::Powf(2.0), sym.clone(), true),
        ("powf_3_negative_base", U::Powf(3.0), sym.clone(), true),
        ("powf_half", U::Powf(0.5), pos.clone(), true),
        ("powf_minus_1_5", U::Powf(-1.5), pos.clone(), true),
        ("max_scalar", U::MaxScalar(0.1), sym.clone(), false),
        ("min_scalar", U::MinScalar(-0.2), sym.clone(), false),
        ("div_scalar", U::DivScalar(6.0), sym.clone(), false),
    ];
    let mut cases: Vec<Case> = list
        .into_iter()
        .map(|(name, op, gen, trans)| unary_case(name, op, gen).tol(if trans { TRANSCENDENTAL } else { ELEMENTWISE }))
        .collect();
    cases.push(unary_case("gt_scalar", U::GtScalar(0.3), sym.clone()).tol(EXACT).forward_only());
    // Ties to even: exact halves, their f32 neighbours (0.49999997 + 0.5 is 1 in f32, so
    // floor(x + 0.5) would be wrong), negatives, zeros and whole numbers past 2^23.
    let halves = vec![
        -2.5,
        -1.5,
        -0.5,
        0.5,
        1.5,
        2.5,
        3.5,
        -3.5,
        0.499_999_97,
        2.499_999_8,
        -0.499_999_97,
        -2.499_999_8,
        0.500_000_06,
        -0.4,
        0.4,
        1.25,
        -1.75,
        8_388_607.5,
        -8_388_607.5,
        8_388_609.0,
        -8_388_609.0,
        1e9,
        -1e9,
        0.0,
        -0.0,
        7.0,
        -7.0,
    ];
    cases.push(unary_case("round_even", U::RoundEven, Gen::Uniform(-6.0, 6.0)).tol(EXACT).forward_only());
    let n = halves.len();
    cases.push(
        Case::new("unary", "round_even_halves", |_, x| x[0].round_even()).input([n], Gen::Values(halves.clone())).tol(EXACT).forward_only(),
    );
    // A chain the GPU backends fuse into one kernel (scaling by powers of two is exact, so the
    // f64 reference agrees bit for bit): 2.5 -> 5 -> 5 -> 2.5 -> 2.
    let chain = |x: &Tensor| x.mul_scalar(2.0)?.round_even()?.mul_scalar(0.5)?.round_even();
    cases.push(
        Case::new("unary", "round_even_fused_chain", move |_, x| chain(&x[0])).input([n], Gen::Values(halves)).tol(EXACT).forward_only(),
    );
    cases.push(Case::new("unary", "exp_large", |_, x| x[0].exp()).input([260, 130], Gen::Uniform(-3.0, 3.0)).tol(TRANSCENDENTAL));
    cases.push(Case::new("unary", "neg_scalar", |_, x| x[0].neg()).input([], sym.clone()));
    // Long and odd-sized: GPU layouts (4 floats per texel, 2-D textures, dispatch limits) must
    // cover the tail.
    cases.push(Case::new("unary", "tanh_long_1d", |_, x| x[0].tanh()).input([300_001], sym.clone()).tol(TRANSCENDENTAL));
    check_all_with(dev, &cases, read).await
}

/// Shape pairs covering equal shapes, trailing broadcasts, both-sided stretches, scalars and
/// rank differences.
const SHAPES: &[(&[usize], &[usize])] = &[
    (&[5, 7], &[5, 7]),
    (&[5, 7], &[7]),
    (&[5, 1], &[1, 7]),
    (&[3, 1, 4], &[5, 1]),
    (&[], &[4, 6]),
    (&[4, 6], &[]),
    (&[2, 3, 4, 5], &[3, 1, 5]),
];

pub async fn binary(dev: &Device, read: Read) -> Outcome {
    use BinaryOp as B;
    let sym = Gen::Uniform(-2.0, 2.0);
    let pos = Gen::Uniform(0.5, 2.0);
    let ops: Vec<(&str, BinaryOp, Gen, Gen, bool)> = vec![
        ("add", B::Add, sym.clone(), sym.clone(), false),
        ("sub", B::Sub, sym.clone(), sym.clone(), false),
        ("mul", B::Mul, sym.clone(), sym.clone(), false),
        ("div", B::Div, sym.clone(), pos.clone(), false),
        ("max", B::Max, sym.clone(), sym.clone(), false),
        ("min", B::Min, sym.clone(), sym.clone(), false),
        ("pow", B::Pow, pos.clone(), sym.clone(), true),
    ];
    let mut cases = Vec::new();
    for (name, op, ga, gb, trans) in &ops {
        for (sa, sb) in SHAPES {
            let op = *op;
            cases.push(
                Case::new("binary", format!("{name}_{sa:?}_{sb:?}"), move |_, x| x[0].binary(op, &x[1]))
                    .input(sa.to_vec(), ga.clone())
                    .input(sb.to_vec(), gb.clone())
                    .tol(if *trans { TRANSCENDENTAL } else { ELEMENTWISE }),
            );
        }
    }
    // Comparisons: small whole numbers so that ties really occur.
    for (name, op) in [("gt", B::Gt), ("ge", B::Ge), ("eq", B::Eq)] {
        for (sa, sb) in SHAPES {
            cases.push(
                Case::new("binary", format!("{name}_{sa:?}_{sb:?}"), move |_, x| x[0].binary(op, &x[1]))
                    .input(sa.to_vec(), Gen::Indices(3))
                    .input(sb.to_vec(), Gen::Indices(3))
                    .tol(EXACT)
                    .forward_only(),
            );
        }
    }
    // Large enough for the threaded paths of the fast CPU backend.
    cases.push(Case::new("binary", "add_large_broadcast", |_, x| x[0].add(&x[1])).input([260, 130], sym.clone()).input([130], sym.clone()));
    cases
        .push(Case::new("binary", "mul_large_equal", |_, x| x[0].mul(&x[1])).input([260, 130], sym.clone()).input([260, 130], sym.clone()));
    cases.push(Case::new("binary", "sub_large_scalar", |_, x| x[0].sub(&x[1])).input([260, 130], sym.clone()).input([], sym.clone()));
    check_all_with(dev, &cases, read).await
}

pub async fn where_(dev: &Device, read: Read) -> Outcome {
    let sym = Gen::Uniform(-2.0, 2.0);
    let shapes: &[(&[usize], &[usize], &[usize])] =
        &[(&[4, 5], &[4, 5], &[4, 5]), (&[4, 1], &[5], &[]), (&[3, 1, 6], &[1, 2, 1], &[2, 6]), (&[], &[3], &[3])];
    let cases: Vec<Case> = shapes
        .iter()
        .map(|(c, a, b)| {
            Case::new("where", format!("{c:?}_{a:?}_{b:?}"), |_, x| Tensor::select(&x[0], &x[1], &x[2]))
                .constant(c.to_vec(), Gen::Mask)
                .input(a.to_vec(), sym.clone())
                .input(b.to_vec(), sym.clone())
        })
        .collect();
    check_all_with(dev, &cases, read).await
}
