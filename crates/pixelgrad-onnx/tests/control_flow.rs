//! Control flow (`If`, `Loop`, `Scan`) beyond the onnxruntime fixtures (`if_*`, `loop_*` and
//! `scan_*` in `scripts/onnx_fixtures.py`, run by `ops_cpu`, `ops_wgpu` and `ops_webgl`):
//! constant conditions folded at load, nested subgraphs reading values two scopes out,
//! malformed subgraphs refused at load with typed errors, and loops without a bound stopped
//! by the run's work limit or its cancel token.

mod common;
mod graphs;

use std::cell::Cell;
use std::rc::Rc;

use graphs::*;
use pixelgrad_core::{CancelToken, Device, Error as CoreError};
use pixelgrad_onnx::proto::{data_type as dt, NodeProto};
use pixelgrad_onnx::{HostTensor, Input, Model, OnnxError, RunOptions, Session, ITERATION_WORK};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn load_err(bytes: &[u8]) -> String {
    match Model::from_bytes(bytes) {
        Ok(_) => panic!("the model loaded"),
        Err(e) => e.to_string(),
    }
}

fn ready<T>(f: impl std::future::Future<Output = T>) -> T {
    match std::pin::pin!(f).poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the run waited"),
    }
}

fn run1(s: &Session, inputs: &[(&str, HostTensor)]) -> Result<Vec<f32>, OnnxError> {
    let feeds: Vec<(&str, Input)> = inputs.iter().map(|(n, t)| (*n, Input::Host(t.clone()))).collect();
    let out = s.run(&feeds)?;
    Ok(out[0].1.to_host()?.to_f32())
}

/// `Loop` body `(i, cond_in, acc) -> (cond_out, acc + step)` with the node's trip count and
/// condition inputs `m` and `cond` (empty names: absent).
fn counting_loop(m: &str, cond: &str, step: &str) -> NodeProto {
    let body = subgraph(
        vec![node("Identity", &["cond_in"], &["cond_out"], vec![]), node("Add", &["acc", step], &["acc_out"], vec![])],
        vec![info("i", dt::INT64, &[]), info("cond_in", dt::BOOL, &[]), info("acc", F32, &[1])],
        &["cond_out", "acc_out"],
        vec![],
    );
    node("Loop", &[m, cond, "acc0"], &["acc"], vec![graph_attr("body", body)])
}

/// An `If` whose condition is a `Constant` is replaced at load by the branch it selects (its
/// initializers become the model's constants); nothing of the other branch is kept.
#[test]
fn a_constant_condition_keeps_one_branch_at_load() {
    let case = common::cases("ops").into_iter().find(|c| c.name == "if_constant_condition").expect("fixture");
    let m = Model::load(case.dir.join("model.onnx")).unwrap();
    assert_eq!(m.stats.folded_ifs, 1);
    assert!(m.nodes.iter().all(|n| n.op_type != "If"), "{:?}", m.nodes.iter().map(|n| &n.op_type).collect::<Vec<_>>());
    // the condition is false: Relu(x) - x, no initializer of the then-branch kept
    assert!(!m.constants.contains_key("t"));
    assert!(m.nodes.iter().any(|n| n.op_type == "Relu"));
    assert!(m.nodes.iter().all(|n| n.op_type != "Mul"));
}

/// A `Loop` body holding an `If` whose branch reads a graph input two scopes out: the outer
/// read climbs through both nodes, and the result is `acc0 + (M - 1) · x` (the branch adds `x`
/// from the second iteration on).
#[test]
fn nested_subgraphs_read_values_two_scopes_out() {
    let then_g = subgraph(vec![node("Add", &["acc", "x"], &["t_out"], vec![])], vec![], &["t_out"], vec![]);
    let else_g = subgraph(vec![node("Identity", &["acc"], &["e_out"], vec![])], vec![], &["e_out"], vec![]);
    let body = subgraph(
        vec![
            node("Greater", &["i", "zero"], &["c"], vec![]),
            node("If", &["c"], &["acc_out"], vec![graph_attr("then_branch", then_g), graph_attr("else_branch", else_g)]),
            node("Identity", &["cond_in"], &["cond_out"], vec![]),
        ],
        vec![info("i", dt::INT64, &[]), info("cond_in", dt::BOOL, &[]), info("acc", F32, &[3])],
        &["cond_out", "acc_out"],
        vec![i64s("zero", &[], &[0])],
    );
    let bytes = model(
        13,
        vec![node("Loop", &["m", "", "acc0"], &["acc"], vec![graph_attr("body", body)])],
        &[("x", &[3]), ("acc0", &[3])],
        &["acc"],
        vec![i64s("m", &[], &[4])],
    );
    let m = Model::from_bytes(&bytes).unwrap();
    // the loop lists `x`, read by the If inside its body, as an input
    assert!(m.nodes[0].inputs.iter().any(|i| i == "x"), "{:?}", m.nodes[0].inputs);
    let s = Session::new(m, &cpu()).unwrap();
    let x = HostTensor::f32(vec![3], vec![1.0, -2.0, 0.5]);
    let acc0 = HostTensor::f32(vec![3], vec![10.0, 20.0, 30.0]);
    assert_eq!(run1(&s, &[("x", x), ("acc0", acc0)]).unwrap(), vec![13.0, 14.0, 31.5]);
}

/// Malformed subgraphs are typed errors at load, naming the node and what is wrong.
#[test]
fn malformed_subgraphs_are_refused_at_load() {
    let one = |name: &str| subgraph(vec![node("Identity", &["x"], &[name], vec![])], vec![], &[name], vec![]);
    let two = subgraph(vec![node("Identity", &["x"], &["a"], vec![]), node("Neg", &["x"], &["b"], vec![])], vec![], &["a", "b"], vec![]);
    let if_model = |attrs| model(13, vec![node("If", &["c"], &["y"], attrs)], &[("x", &[2]), ("c", &[])], &["y"], vec![]);

    // a missing branch
    let e = load_err(&if_model(vec![graph_attr("then_branch", one("t"))]));
    assert!(e.contains("'else_branch' is required"), "{e}");
    // a branch making more values than the node has outputs
    let e = load_err(&if_model(vec![graph_attr("then_branch", two), graph_attr("else_branch", one("e"))]));
    assert!(e.contains("then_branch makes 2 values") && e.contains("1 outputs"), "{e}");
    // a branch that is not a graph
    let e = load_err(&if_model(vec![int("then_branch", 1), graph_attr("else_branch", one("e"))]));
    assert!(e.contains("'then_branch' should be a graph"), "{e}");
    // a branch reading a value no scope has
    let lost = subgraph(vec![node("Identity", &["nowhere"], &["t"], vec![])], vec![], &["t"], vec![]);
    let e = load_err(&if_model(vec![graph_attr("then_branch", lost), graph_attr("else_branch", one("e"))]));
    assert!(e.contains("'nowhere'") && e.contains("nothing produces"), "{e}");

    // a Loop body taking fewer inputs than (iteration, condition, carried values)
    let body = subgraph(vec![node("Identity", &["acc"], &["acc_out"], vec![])], vec![info("acc", F32, &[1])], &["acc_out"], vec![]);
    let e = load_err(&model(
        13,
        vec![node("Loop", &["", "", "acc0"], &["acc"], vec![graph_attr("body", body)])],
        &[("acc0", &[1])],
        &["acc"],
        vec![],
    ));
    assert!(e.contains("body takes 1 inputs") && e.contains("must take 3"), "{e}");

    // Scan: num_scan_inputs beyond the inputs, and a body of the wrong arity
    let body = subgraph(
        vec![node("Add", &["s", "xt"], &["s_out"], vec![])],
        vec![info("s", F32, &[2]), info("xt", F32, &[2])],
        &["s_out"],
        vec![],
    );
    let scan = |k: i64, body| {
        model(
            13,
            vec![node("Scan", &["s0", "xs"], &["s"], vec![int("num_scan_inputs", k), graph_attr("body", body)])],
            &[("s0", &[2]), ("xs", &[3, 2])],
            &["s"],
            vec![],
        )
    };
    let e = load_err(&scan(3, body.clone()));
    assert!(e.contains("num_scan_inputs is 3"), "{e}");
    let mut short = body;
    short.input.pop();
    let e = load_err(&scan(1, short));
    assert!(e.contains("body takes 1 inputs"), "{e}");

    // a graph attribute on an operator that takes none
    let e = load_err(&model(13, vec![node("Relu", &["x"], &["y"], vec![graph_attr("body", one("t"))])], &[("x", &[2])], &["y"], vec![]));
    assert!(e.contains("'body' is a graph, which Relu does not take"), "{e}");
}

/// A `Loop` with neither a trip count nor a condition never ends by itself; every iteration
/// counts `ITERATION_WORK` against the run's limit, so the run stops with a budget error
/// after as many iterations as the limit allows, and the session runs again afterwards.
#[test]
fn a_loop_without_a_bound_stops_at_the_work_limit() {
    let bytes = model(13, vec![counting_loop("", "", "one")], &[("acc0", &[1])], &["acc"], vec![f32s("one", &[1], &[1.0])]);
    let s = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap();
    let acc0 = HostTensor::f32(vec![1], vec![0.0]);
    for _ in 0..2 {
        let opts = RunOptions { max_work: Some(16 * ITERATION_WORK), ..Default::default() };
        let e = s.run_with(&[("acc0", Input::Host(acc0.clone()))], &opts).unwrap_err();
        assert!(matches!(e.core(), Some(CoreError::Budget { .. })), "{e}");
    }
    // the same graph with a trip count runs
    let bytes =
        model(13, vec![counting_loop("m", "", "one")], &[("acc0", &[1])], &["acc"], vec![f32s("one", &[1], &[1.0]), i64s("m", &[], &[7])]);
    let s = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap();
    assert_eq!(run1(&s, &[("acc0", acc0)]).unwrap(), vec![7.0]);
}

/// An unbounded loop in an asynchronous run pauses between iterations like between nodes, so
/// a cancel arriving during a pause (a browser's `AbortSignal`) stops it at the next step.
#[test]
fn a_loop_without_a_bound_stops_when_cancelled() {
    let bytes = model(13, vec![counting_loop("", "", "one")], &[("acc0", &[1])], &["acc"], vec![f32s("one", &[1], &[1.0])]);
    let s = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap();
    let cancel = CancelToken::new();
    let pauses = Rc::new(Cell::new(0));
    let pause: pixelgrad_onnx::Pause = {
        let (pauses, cancel) = (pauses.clone(), cancel.clone());
        Rc::new(move || {
            pauses.set(pauses.get() + 1);
            if pauses.get() == 100 {
                cancel.cancel();
            }
            Box::pin(async {})
        })
    };
    let opts = RunOptions { cancel: Some(cancel), pause: Some(pause), pause_every: 0, ..Default::default() };
    let acc0 = HostTensor::f32(vec![1], vec![0.0]);
    let e = ready(s.run_async_with(&[("acc0", Input::Host(acc0))], &opts)).unwrap_err();
    assert!(matches!(e.core(), Some(CoreError::Cancelled { .. })), "{e}");
    assert_eq!(pauses.get(), 100);
}

/// A `Loop` whose condition the body computes on the device reads it back once per
/// iteration, and stops when it turns false: `acc` doubles until it passes 100.
#[test]
fn a_device_condition_ends_the_loop() {
    let body = subgraph(
        vec![
            node("Add", &["acc", "acc"], &["acc_out"], vec![]),
            node("ReduceSum", &["acc_out"], &["s"], vec![int("keepdims", 0)]),
            node("Less", &["s", "limit"], &["cond_out"], vec![]),
        ],
        vec![info("i", dt::INT64, &[]), info("cond_in", dt::BOOL, &[]), info("acc", F32, &[1])],
        &["cond_out", "acc_out"],
        vec![],
    );
    let go = pixelgrad_onnx::proto::TensorProto { name: "go".into(), data_type: dt::BOOL, int32_data: vec![1], ..Default::default() };
    let bytes = model(
        13,
        vec![node("Loop", &["", "go", "acc0"], &["acc"], vec![graph_attr("body", body)])],
        &[("acc0", &[1])],
        &["acc"],
        vec![f32s("limit", &[], &[100.0]), go],
    );
    let s = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap();
    assert_eq!(run1(&s, &[("acc0", HostTensor::f32(vec![1], vec![3.0]))]).unwrap(), vec![192.0]);
}

/// A long loop's scan output is held to the device's element cap as it grows, iteration by
/// iteration, not only when it is stacked at the end: with a cap of 64 elements, a scan output
/// of 8 elements per iteration stops the run at the ninth.
#[test]
fn scan_outputs_are_held_to_the_element_cap_while_they_grow() {
    let body = subgraph(
        vec![node("Identity", &["cond_in"], &["cond_out"], vec![]), node("Add", &["x", "x"], &["scan_out"], vec![])],
        vec![info("i", dt::INT64, &[]), info("cond_in", dt::BOOL, &[])],
        &["cond_out", "scan_out"],
        vec![],
    );
    let bytes = model(
        13,
        vec![node("Loop", &["m", ""], &["ys"], vec![graph_attr("body", body)])],
        &[("x", &[8])],
        &["ys"],
        vec![i64s("m", &[], &[1000])],
    );
    let dev = cpu();
    dev.set_limits(pixelgrad_core::Limits { max_elements: 64, ..dev.limits() });
    let s = Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap();
    let e = run1(&s, &[("x", HostTensor::f32(vec![8], vec![1.0; 8]))]).unwrap_err().to_string();
    assert!(e.contains("scan output 0 would hold 72 elements after 9 iterations"), "{e}");
}
