//! The reductions launched as passes of the programs rendered from their one definition
//! (`ReduceKernel::Rendered`) against the same passes evaluated on the CPU
//! (`pixelgrad_core::kernel::program_eval`, bit for bit), against the CPU backend's loops
//! (max, min and argmax bit for bit, NaN and -0 edges included; sums to rounding) and against the hand-written
//! `kernels/reduce.wgsl` launched by a second backend in the same process.

mod common;

use common::*;
use pixelgrad_core::kernel::program_eval::eval;
use pixelgrad_core::kernel::programs::KernelProgram;
use pixelgrad_core::kernel::reductions::{reduce_params, ReduceProgram};
use pixelgrad_core::{Backend, Op, ReduceOp};
use pixelgrad_wgpu::{ReduceKernel, WgpuBackend, WgpuOptions};

fn rendered() -> WgpuBackend {
    WgpuBackend::new(WgpuOptions { reductions: ReduceKernel::Rendered, ..WgpuOptions::default() })
        .expect("a WebGPU adapter (lavapipe in CI)")
}

fn hand_written() -> WgpuBackend {
    WgpuBackend::new(WgpuOptions { reductions: ReduceKernel::HandWritten, ..WgpuOptions::default() }).expect("a WebGPU adapter")
}

/// The backend's group rule (`ops/reduce_rendered.rs`): the axis itself up to 1024, else the
/// smallest `g` with `g^p >= n` for the fewest passes `p`.
fn group_for(n: usize) -> usize {
    if n <= 1024 {
        return n.max(1);
    }
    let mut p = 1u32;
    while 1024usize.pow(p) < n {
        p += 1;
    }
    let mut g = 2usize;
    while g.pow(p) < n {
        g += 1;
    }
    g
}

/// One pass evaluated on the CPU: the partials and their count per axis.
fn pass(which: ReduceProgram, ins: &[&[f32]], outer: usize, n: usize, inner: usize, group: usize) -> (Vec<f32>, usize) {
    let params = reduce_params(n, inner, group);
    let p: Vec<i64> = params.iter().map(|&v| v as i64).collect();
    (eval(&which.program(), ins, &p, outer * params[1] * inner).unwrap(), params[1])
}

fn tree(which: ReduceProgram, x: &[f32], outer: usize, mut n: usize, inner: usize) -> Vec<f32> {
    let mut cur = x.to_vec();
    loop {
        let (next, m) = pass(which, &[&cur], outer, n, inner, group_for(n));
        cur = next;
        if m == 1 {
            return cur;
        }
        n = m;
    }
}

/// The passes the rendered launch runs, evaluated on the CPU.
fn passes_on_cpu(op: ReduceOp, x: &[f32], outer: usize, n: usize, inner: usize) -> Vec<f32> {
    let group = group_for(n);
    match op {
        ReduceOp::ArgMax if n <= group => pass(ReduceProgram::ArgMax, &[x], outer, n, inner, group).0,
        ReduceOp::ArgMax => {
            let best = tree(ReduceProgram::Max, x, outer, n, inner);
            let (cand, m) = pass(ReduceProgram::FirstEqual, &[x, &best], outer, n, inner, group);
            tree(ReduceProgram::Min, &cand, outer, m, inner)
        }
        op => tree(ReduceProgram::of(op), x, outer, n, inner),
    }
}

/// The CPU backend's result.
fn cpu_backend(op: ReduceOp, x: &[f32], dims: &[usize], axis: usize) -> Vec<f32> {
    let b = pixelgrad_cpu::CpuBackend::new();
    let shape = pixelgrad_core::Shape::from(dims.to_vec());
    let out = Op::Reduce { op, axis }.infer_shape(&[&shape]).unwrap();
    let s = b.upload(x).unwrap();
    let r = b.execute(&Op::Reduce { op, axis }, &[&s], &[&shape], &out).unwrap();
    b.read(&r, out.numel()).unwrap()
}

/// Bit-equal, any NaN matching any NaN.
fn same_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{what}: element {i}: got {g:?}, want {w:?}");
    }
}

/// Within `ulps` units in the last place (exp and log are the device's), the same
/// non-finite values exactly.
fn within_ulps(got: &[f32], want: &[f32], ulps: i64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if g.is_finite() && w.is_finite() {
            (i64::from(g.to_bits() as i32) - i64::from(w.to_bits() as i32)).abs() <= ulps || (g - w).abs() <= 1e-6
        } else {
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
        };
        assert!(ok, "{what}: element {i}: got {g:?}, want {w:?}");
    }
}

/// Values with ties, signed zeros, infinities and (where `nan`) NaNs, by position.
fn edgy(len: usize, seed: usize, nan: bool) -> Vec<f32> {
    (0..len)
        .map(|i| match (i * 7 + seed * 3) % 13 {
            0 => -0.0,
            1 => 0.0,
            2 | 4 => 2.5,
            3 => -1.0,
            5 => 0.75,
            6 => -3.0,
            7 => 1.25,
            8 if nan && i % 5 == 0 => f32::NAN,
            9 if i % 7 == 0 => f32::NEG_INFINITY,
            10 if i % 11 == 0 => f32::INFINITY,
            _ => pixelgrad_core::rng::uniform(seed as u64, i as u64) * 4.0 - 2.0,
        })
        .collect()
}

const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::LogSumExp];

/// `[dims], axis`: last axis (aligned, not a multiple of 4, tiny, long: two and three passes),
/// first axis, middle axis.
const CASES: [(&[usize], usize); 10] = [
    (&[16, 64], 1),
    (&[7, 1001], 1),
    (&[8, 10], 1),
    (&[3, 1], 1),
    (&[2, 5003], 1),
    (&[1, (1 << 20) + 5], 1),
    (&[1030, 3], 0),
    (&[2000, 5], 0),
    (&[5, 37, 6], 1),
    (&[3, 2100, 2], 1),
];

fn split(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    (dims[..axis].iter().product(), dims[axis], dims[axis + 1..].iter().product())
}

#[test]
fn rendered_passes_match_their_cpu_evaluation_and_the_cpu_backend() {
    let r = rendered();
    for (dims, axis) in CASES {
        let (outer, n, inner) = split(dims, axis);
        let numel = outer * n * inner;
        for (k, nan) in [(0, false), (1, true)] {
            let x = edgy(numel, k + dims.len(), nan);
            for op in OPS {
                let what = format!("{op:?} of {dims:?} over axis {axis}, NaN {nan}");
                let (got, _) = run(&r, &Op::Reduce { op, axis }, &[(&x, dims)]);
                let want = passes_on_cpu(op, &x, outer, n, inner);
                let cpu = cpu_backend(op, &x, dims, axis);
                match op {
                    ReduceOp::LogSumExp => {
                        within_ulps(&got, &want, 8, &what);
                        within_ulps(&got, &cpu, 64, &format!("{what} (cpu backend)"));
                    }
                    ReduceOp::Sum => {
                        same_bits(&got, &want, &what);
                        // The CPU backend adds in another order (vectorised lanes).
                        let cpu: Vec<f64> = cpu.iter().map(|&v| f64::from(v)).collect();
                        close(&got, &cpu, 1e-5, 1e-4, &format!("{what} (cpu backend)"));
                    }
                    _ => {
                        same_bits(&got, &want, &what);
                        same_bits(&got, &cpu, &format!("{what} (cpu backend)"));
                    }
                }
            }
        }
    }
}

/// On finite data without signed zeros (where `max` of WGSL and the first-maximum rule
/// agree) both launches give the same maxima, minima and argmax; sums agree to rounding.
#[test]
fn rendered_and_hand_written_agree() {
    let (r, h) = (rendered(), hand_written());
    for (dims, axis) in CASES {
        let x = data(dims.iter().product(), 7, -3.0, 3.0);
        let x: Vec<f32> = x.iter().map(|v| (v * 8.0).round() / 8.0 + 1.0 / 1024.0).collect();
        for op in OPS {
            let what = format!("{op:?} of {dims:?} over axis {axis}");
            let (got, _) = run(&r, &Op::Reduce { op, axis }, &[(&x, dims)]);
            let (hand, _) = run(&h, &Op::Reduce { op, axis }, &[(&x, dims)]);
            match op {
                ReduceOp::Sum | ReduceOp::LogSumExp => {
                    let want: Vec<f64> = hand.iter().map(|&v| f64::from(v)).collect();
                    close(&got, &want, 1e-5, 1e-3, &what);
                }
                _ => same_bits(&got, &hand, &what),
            }
        }
    }
}

/// The choice is real: the rendered backend launches the reduction programs (the argmax of a
/// long axis as its max tree, first-equal pass and min tree), the hand-written one `reduce`;
/// the default on a CPU adapter renders sums and short argmax, and keeps max hand-written,
/// except on SwiftShader, where it renders every kind from 2^16 input elements up and none
/// below.
#[test]
fn the_option_picks_the_launch() {
    let x = data(3 * 5000, 3, -1.0, 1.0);
    let (r, h, auto) = (rendered(), hand_written(), backend());
    for b in [&r, &h, &auto] {
        b.set_launch_log(true);
    }
    let argmax = Op::Reduce { op: ReduceOp::ArgMax, axis: 1 };
    run(&r, &argmax, &[(&x, &[3, 5000])]);
    run(&h, &argmax, &[(&x, &[3, 5000])]);
    let (rl, hl) = (r.take_launch_log().join("\n"), h.take_launch_log().join("\n"));
    for name in ["reduce_max", "reduce_first_equal", "reduce_min"] {
        assert!(rl.contains(name), "rendered launches:\n{rl}");
        assert!(!hl.contains(name), "hand-written launches:\n{hl}");
    }
    let report = auto.report();
    if report.device_type.contains("Cpu") {
        run(&auto, &Op::Reduce { op: ReduceOp::Sum, axis: 1 }, &[(&x, &[3, 5000])]);
        run(&auto, &Op::Reduce { op: ReduceOp::Max, axis: 1 }, &[(&x, &[3, 5000])]);
        run(&auto, &argmax, &[(&x[..3000], &[3, 1000])]);
        run(&auto, &argmax, &[(&x, &[3, 5000])]);
        let log = auto.take_launch_log();
        let kernels: Vec<&str> = log.iter().map(|l| l.split_whitespace().nth(1).unwrap_or("")).collect();
        if report.adapter.contains("SwiftShader") {
            // below 2^16 elements every kind hand-written; from there every kind rendered
            assert_eq!(kernels, ["reduce", "reduce", "reduce", "reduce"], "{log:#?}");
            let big = data(3 * 25_000, 4, -1.0, 1.0);
            run(&auto, &Op::Reduce { op: ReduceOp::Max, axis: 1 }, &[(&big, &[3, 25_000])]);
            let log = auto.take_launch_log();
            let kernels: Vec<&str> = log.iter().map(|l| l.split_whitespace().nth(1).unwrap_or("")).collect();
            assert_eq!(kernels, ["reduce_max", "reduce_max"], "{log:#?}");
        } else {
            assert_eq!(kernels, ["reduce_sum", "reduce_sum", "reduce", "reduce_argmax", "reduce"], "{log:#?}");
        }
    }
}

/// Branches in `block` and the blocks inside it.
fn ifs(block: &naga::Block) -> usize {
    block
        .iter()
        .map(|s| match s {
            naga::Statement::If { accept, reject, .. } => 1 + ifs(accept) + ifs(reject),
            naga::Statement::Block(b) => ifs(b),
            naga::Statement::Loop { body, continuing, .. } => ifs(body) + ifs(continuing),
            _ => 0,
        })
        .sum()
}

/// `src` (a rendered pass of `which`) parsed and validated by naga, after checking that its
/// `compute` function never short-circuits (`&&`, `||`): see
/// `rendered_passes_branch_only_where_their_definition_does`.
fn checked_module(which: ReduceProgram, src: &str) -> naga::Module {
    let compute = &src[src.find("fn compute(").expect("a compute function")..];
    for op in ["&&", "||"] {
        assert!(!compute.contains(op), "{which:?} short-circuits with {op}:\n{compute}");
    }
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{which:?}: {}", e.emit_to_string(src)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{which:?}: {}", e.emit_to_string(src)));
    module
}

/// Every pass branches only where its definition does (`If`, an accumulator's first fold),
/// never per condition term: WGSL's `&&` and `||` short-circuit, which compilers turn into a
/// branch per term, and the log-sum-exp pass's 24 conditions per texel made SwiftShader
/// (Chromium's WebGPU on the CPU) compile for minutes in gigabytes until Chromium lost the
/// device (`bench/notes/2026-12-07-webgpu-reductions-rendered.md`). The conditions are
/// spelled `&` and `|`, each term in parentheses, which naga parses and validates.
#[test]
fn rendered_passes_branch_only_where_their_definition_does() {
    for which in ReduceProgram::ALL {
        let src = pixelgrad_wgpu::program_wgsl(KernelProgram::Reduce(which));
        let module = checked_module(which, &src);
        let compute = &src[src.find("fn compute(").expect("a compute function")..];
        let (_, f) = module.functions.iter().find(|(_, f)| f.name.as_deref() == Some("compute")).expect("compute");
        let n = ifs(&f.body);
        // the scan's two forms and their loops' exit tests (4), argmax's first fold (2),
        // FirstEqual's NaN tests and first folds (4); short-circuit terms made dozens
        assert!(n <= 8, "{which:?}: {n} branches in compute:\n{compute}");
    }
}

/// A reduction of a pending elementwise result reads it through a fused read in the first
/// pass of each tree (and argmax's first-equal pass), with the values of the same passes over
/// the stored result (fusion off) bit for bit: sum(exp(x)), max(x * 2 + y) with `y`
/// broadcast along the reduced axis, min and argmax of `|x - y|`, log-sum-exp of `x * 2 + y`.
/// The launch counts show the rendered passes ran (the hand-written kernel is one launch).
#[test]
fn a_fused_input_is_read_by_the_first_rendered_pass() {
    use pixelgrad_core::{Device, Tensor};
    let device = |fuse: bool| {
        Device::new(
            WgpuBackend::new(WgpuOptions { reductions: ReduceKernel::Rendered, fuse, ..WgpuOptions::default() }).expect("a WebGPU adapter"),
        )
    };
    let (fused, stored) = (device(true), device(false));
    // [dims], axis, the rendered passes of a sum (a long argmax adds the first-equal pass
    // and the min tree's).
    let cases: [(&[usize], usize, u64, u64); 4] =
        [(&[16, 64], 1, 1, 1), (&[2, 5003], 1, 2, 4), (&[1030, 3], 0, 2, 4), (&[5, 37, 6], 1, 1, 1)];
    for (dims, axis, passes, argmax_passes) in cases {
        let numel: usize = dims.iter().product();
        let x = data(numel, 11, -3.0, 3.0);
        let mut ydims = dims.to_vec();
        ydims[axis] = 1;
        let y = data(ydims.iter().product(), 12, -1.0, 1.0);
        let run = |d: &Device, op: ReduceOp| -> (Vec<f32>, u64) {
            let xt = Tensor::from_vec(d, &x, dims.to_vec()).unwrap();
            let yt = Tensor::from_vec(d, &y, ydims.clone()).unwrap();
            d.flush().unwrap();
            let before = d.counters().launches;
            let m = match op {
                ReduceOp::Sum => xt.exp().unwrap(),
                ReduceOp::Min | ReduceOp::ArgMax => xt.sub(&yt).unwrap().abs().unwrap(),
                _ => xt.mul_scalar(2.0).unwrap().add(&yt).unwrap(),
            };
            let a = axis as isize;
            let r = match op {
                ReduceOp::Sum => m.sum_axis(a, false),
                ReduceOp::Max => m.max_axis(a, false),
                ReduceOp::Min => m.min_axis(a, false),
                ReduceOp::ArgMax => m.argmax(a, false),
                ReduceOp::LogSumExp => m.logsumexp(a, false),
            }
            .unwrap();
            let v = r.to_vec().unwrap();
            (v, d.counters().launches - before)
        };
        for op in OPS {
            let what = format!("{op:?} of a fused map over {dims:?} axis {axis}");
            let (got, launches) = run(&fused, op);
            let (want, unfused_launches) = run(&stored, op);
            same_bits(&got, &want, &what);
            let rendered = if op == ReduceOp::ArgMax { argmax_passes } else { passes };
            assert_eq!(launches, rendered, "{what}: launches");
            assert!(unfused_launches > launches, "{what}: {unfused_launches} launches unfused");
        }
    }
}

/// Every rendered pass reading a fused input (unary and binary definitions) parses and
/// validates with naga, and branches no more than over a stored input.
#[test]
fn fused_rendered_passes_validate_with_naga() {
    let kernels = [pixelgrad_core::UnaryOp::Exp.kernel().unwrap(), pixelgrad_core::BinaryOp::Add.kernel().unwrap()];
    for which in ReduceProgram::ALL {
        for k in &kernels {
            let src = pixelgrad_wgpu::fused_reduce_wgsl(which, k).unwrap();
            let compute = &src[src.find("fn compute(").expect("a compute function")..];
            assert!(compute.contains("pg_load("), "{which:?} reads no fused input:\n{compute}");
            checked_module(which, &src);
        }
    }
}

/// `Auto` over a fused input renders where that measured faster: every kind on SwiftShader,
/// only log-sum-exp on lavapipe (a sum of exp(x) stays one hand-written launch there). The
/// launch counts tell them apart: an axis of 25000 is two rendered passes.
#[test]
fn auto_renders_a_fused_input_where_it_measured_faster() {
    use pixelgrad_core::{Device, Tensor};
    let b = backend();
    let report = b.report();
    if !report.device_type.contains("Cpu") {
        return;
    }
    let swiftshader = report.adapter.contains("SwiftShader");
    let d = Device::new(b);
    // 75000 elements: past the 2^16 below which SwiftShader keeps the hand-written kernel
    let x = data(3 * 25_000, 5, -2.0, 2.0);
    let xt = Tensor::from_vec(&d, &x, [3, 25_000]).unwrap();
    d.flush().unwrap();
    for (op, rendered) in [(ReduceOp::Sum, swiftshader), (ReduceOp::LogSumExp, true)] {
        let before = d.counters().launches;
        let m = xt.exp().unwrap();
        let r = if op == ReduceOp::Sum { m.sum_axis(1, false) } else { m.logsumexp(1, false) }.unwrap();
        r.to_vec().unwrap();
        let launches = d.counters().launches - before;
        assert_eq!(launches, if rendered { 2 } else { 1 }, "{op:?} of exp(x) on {}", report.adapter);
    }
}
