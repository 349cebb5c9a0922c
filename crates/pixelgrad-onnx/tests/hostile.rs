//! Untrusted model files: every node is checked against its operator's schema when the model
//! is read, so malformed nodes are typed errors before any operator sees them; graphs that
//! are not graphs (a value written twice, a cycle) are refused; loading stays linear in the
//! model's size; and a run keeps to its work limit and stops when cancelled.

mod graphs;

use graphs::*;
use pixelgrad_core::{CancelToken, Device, Error as CoreError, Tensor};
use pixelgrad_onnx::registry::{self, OPS, VARIADIC};
use pixelgrad_onnx::{HostTensor, Input, Model, OnnxError, RunOptions, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn load_err(bytes: &[u8]) -> OnnxError {
    match Model::from_bytes(bytes) {
        Ok(_) => panic!("the model loaded"),
        Err(e) => e,
    }
}

/// The four files of issue 38 (one node with only an operator type) made `pixelgrad run`
/// panic in the loader; each is now an error naming the node and what its schema wants.
#[test]
fn issue38_nodes_without_inputs_or_outputs_are_errors() {
    for (op, bytes) in issue38_models() {
        assert!(bytes.len() <= 32, "{op}: {} bytes", bytes.len());
        let e = load_err(&bytes);
        let msg = e.to_string();
        assert!(matches!(e, OnnxError::Node { .. }), "{op}: {msg}");
        assert!(msg.contains(op) && msg.contains("has 0 inputs"), "{op}: {msg}");
    }
    // outputs alone missing: QuantizeLinear with its inputs but no output
    let q = model(13, vec![node("QuantizeLinear", &["x", "s"], &[], vec![])], &[("x", &[2])], &[], vec![f32s("s", &[], &[0.5])]);
    let msg = load_err(&q).to_string();
    assert!(msg.contains("has 0 outputs") && msg.contains("makes 1"), "{msg}");
}

/// Input and output counts, omitted inputs that are not optional and missing required
/// attributes, each against the schema of the model's opset.
#[test]
fn nodes_outside_their_schema_are_refused_at_load() {
    let x = [("x", &[1i64, 1, 4, 4][..])];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (model(13, vec![node("Relu", &["x", "x"], &["y"], vec![])], &x, &["y"], vec![]), "has 2 inputs; Relu (opset 6+) takes 1"),
        (model(13, vec![node("Split", &["x"], &[], vec![])], &x, &[], vec![]), "makes at least 1"),
        (model(13, vec![node("MaxPool", &["x"], &["y"], vec![])], &x, &["y"], vec![]), "attribute 'kernel_shape' is required"),
        (model(13, vec![node("Add", &["x", ""], &["y"], vec![])], &x, &["y"], vec![]), "input 1 is empty"),
        // Slice reads starts/ends from attributes before opset 10, from inputs after
        (model(9, vec![node("Slice", &["x"], &["y"], vec![])], &x, &["y"], vec![]), "attribute 'ends' is required"),
        (
            model(13, vec![node("Slice", &["x"], &["y"], vec![ints("starts", &[0]), ints("ends", &[1])])], &x, &["y"], vec![]),
            "takes 3 to 5",
        ),
        (model(13, vec![node("TopK", &["x", "k"], &["v"], vec![])], &x, &["v"], vec![i64s("k", &[1], &[1])]), "makes 2"),
    ];
    for (bytes, want) in cases {
        let msg = load_err(&bytes).to_string();
        assert!(msg.contains(want), "expected '{want}' in: {msg}");
    }
    // an omitted optional input is fine: Clip without min, with max
    let clip = model(13, vec![node("Clip", &["x", "", "m"], &["y"], vec![])], &x, &["y"], vec![f32s("m", &[], &[0.5])]);
    let s = Session::new(Model::from_bytes(&clip).unwrap(), &cpu()).unwrap();
    let y = s.run(&[("x", Tensor::ones(s.device(), [1, 1, 4, 4]).unwrap().into())]).unwrap();
    assert_eq!(y[0].1.to_host().unwrap().to_f32(), vec![0.5; 16]);
}

/// Every operator of the registry, as a node with no inputs and outputs, with one input too
/// many, and with the fewest it takes (graph inputs, attributes at the defaults): the first
/// two are load errors, the last loads and runs to a value or a typed error; none panics.
#[test]
fn every_registered_operator_at_and_outside_its_arity() {
    let dev = cpu();
    let (mut ran, mut refused) = (0, 0);
    for row in OPS {
        let opset = row.schemas.last().unwrap().since.max(13);
        let s = row.schema(opset);
        let domain = match row.domain {
            registry::Domain::Onnx => "",
            registry::Domain::Microsoft => "com.microsoft",
        };
        let with = |n_in: usize, n_out: usize, attrs: bool| {
            let names: Vec<String> = (0..n_in).map(|i| format!("i{i}")).collect();
            let outs: Vec<String> = (0..n_out).map(|i| format!("o{i}")).collect();
            let ins: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            let os: Vec<&str> = outs.iter().map(|s| s.as_str()).collect();
            let req: Vec<_> = if attrs { s.required_attrs.iter().map(|a| ints(a, &[1])).collect() } else { vec![] };
            let mut n = node(row.name, &ins, &os, req);
            n.domain = domain.into();
            let shapes: Vec<[i64; 4]> = vec![[1, 2, 4, 4]; n_in];
            let inputs: Vec<(&str, &[i64])> = ins.iter().zip(&shapes).map(|(n, d)| (*n, &d[..])).collect();
            model(opset, vec![n], &inputs, &os, vec![])
        };
        let guarded = |what: &str, bytes: Vec<u8>| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let m = Model::from_bytes(&bytes)?;
                let session = Session::new(m, &dev)?;
                let feeds: Vec<(String, Input)> = session
                    .inputs()
                    .iter()
                    .map(|i| (i.name.clone(), Input::Host(HostTensor::f32(vec![1, 2, 4, 4], vec![0.5; 32]))))
                    .collect();
                let feeds: Vec<(&str, Input)> = feeds.iter().map(|(n, i)| (n.as_str(), i.clone())).collect();
                session.run(&feeds).map(|_| ())
            }))
            .unwrap_or_else(|_| panic!("{} {what} panicked", row.name))
        };
        if s.inputs.0 > 0 || s.outputs.0 > 0 {
            let e = guarded("with no inputs or outputs", with(0, 0, true)).unwrap_err();
            assert!(matches!(e, OnnxError::Node { .. }), "{}: {e}", row.name);
        }
        if s.inputs.1 != VARIADIC {
            let e = guarded("with an input too many", with(s.inputs.1 + 1, s.outputs.0, true)).unwrap_err();
            assert!(e.to_string().contains("inputs;"), "{}: {e}", row.name);
        }
        match guarded("at its fewest inputs", with(s.inputs.0, s.outputs.0.max(1).min(s.outputs.1), true)) {
            Ok(()) => ran += 1,
            Err(_) => refused += 1,
        }
    }
    println!("{} operators: {ran} ran at their fewest inputs, {refused} refused them with an error", OPS.len());
    assert!(ran > 50, "only {ran} operators ran at their fewest inputs");
}

#[test]
fn supported_lists_are_the_registry() {
    assert_eq!(pixelgrad_onnx::SUPPORTED_OPS.len() + pixelgrad_onnx::SUPPORTED_MS_OPS.len(), OPS.len());
    for row in OPS {
        let list = if row.domain == registry::Domain::Onnx { pixelgrad_onnx::SUPPORTED_OPS } else { pixelgrad_onnx::SUPPORTED_MS_OPS };
        assert!(list.contains(&row.name), "{}", row.name);
        assert!(registry::find(if row.domain == registry::Domain::Onnx { "" } else { "com.microsoft" }, row.name).is_some());
        // schemas oldest first, arity bounds ordered
        assert!(row.schemas.windows(2).all(|w| w[0].since < w[1].since), "{}", row.name);
        assert!(row.schemas.iter().all(|s| s.inputs.0 <= s.inputs.1 && s.outputs.0 <= s.outputs.1), "{}", row.name);
    }
    assert!(registry::find("ai.onnx", "Conv").is_some() && registry::find("com.example", "Conv").is_none());
}

/// ONNX graphs name each value once and have no cycles; a file that breaks that is refused
/// with a parse error, as are duplicated attributes.
#[test]
fn malformed_graphs_are_refused() {
    let x = [("x", &[4i64][..])];
    let twice = model(13, vec![node("Relu", &["x"], &["y"], vec![]), node("Neg", &["x"], &["y"], vec![])], &x, &["y"], vec![]);
    assert!(load_err(&twice).to_string().contains("more than one node"));
    let shadow = model(13, vec![node("Relu", &["x"], &["x"], vec![])], &x, &["x"], vec![]);
    assert!(load_err(&shadow).to_string().contains("graph input"));
    let cycle = model(13, vec![node("Relu", &["b"], &["a"], vec![]), node("Neg", &["a"], &["b"], vec![])], &x, &["a"], vec![]);
    assert!(load_err(&cycle).to_string().contains("cycle"));
    let dup = model(13, vec![node("Softmax", &["x"], &["y"], vec![int("axis", 0), int("axis", 0)])], &x, &["y"], vec![]);
    assert!(load_err(&dup).to_string().contains("given twice"));
    let dangling = model(13, vec![node("Relu", &["nope"], &["y"], vec![])], &x, &["y"], vec![]);
    assert!(load_err(&dangling).to_string().contains("nothing produces"));
}

/// 100 000 `Identity` nodes stored last-to-first (the order the old sort took quadratic time
/// on): loading visits each node and edge a bounded number of times, and the model runs.
#[test]
fn loading_is_linear_in_the_graph() {
    let n = 100_000;
    let mut nodes: Vec<_> = (0..n).map(|i| node("Identity", &[&format!("v{i}")], &[&format!("v{}", i + 1)], vec![])).collect();
    nodes.reverse();
    let bytes = model(13, nodes, &[("v0", &[2])], &[&format!("v{n}")], vec![]);
    let m = Model::from_bytes(&bytes).unwrap();
    assert_eq!(m.nodes.len(), n);
    let steps = m.stats.load_steps;
    assert!(steps <= 8 * n, "{steps} bookkeeping steps for {n} nodes");
    let s = Session::new(m, &cpu()).unwrap();
    let x = Tensor::from_vec(s.device(), &[1.0, 2.0], [2]).unwrap();
    assert_eq!(s.run(&[("v0", x.into())]).unwrap()[0].1.to_host().unwrap().to_f32(), vec![1.0, 2.0]);
}

/// `y = ((x·w)·w)·w ...`: `k` products of a [1, 64] row with a [64, 64] matrix.
fn chain(k: usize) -> Session {
    let mut nodes = Vec::new();
    for i in 0..k {
        nodes.push(node("MatMul", &[&format!("h{i}"), "w"], &[&format!("h{}", i + 1)], vec![]));
    }
    let w = f32s("w", &[64, 64], &vec![1.0 / 64.0; 64 * 64]);
    let bytes = model(13, nodes, &[("h0", &[1, 64])], &[&format!("h{k}")], vec![w]);
    Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap()
}

fn ones(s: &Session) -> Vec<(&'static str, Input)> {
    vec![("h0", Tensor::ones(s.device(), [1, 64]).unwrap().into())]
}

fn budget_of(e: &OnnxError) -> Option<(u64, u64, &'static str)> {
    match e.core() {
        Some(CoreError::Budget { requested, limit, raise, .. }) => Some((*requested, *limit, *raise)),
        _ => None,
    }
}

/// Each product is 64·64 = 4096 steps: a work limit of 10 000 lets two run and stops the
/// third, with an error that says how to raise it; the session then runs under a raised limit
/// (per run, or for the session) and gives the right values.
#[test]
fn a_run_stops_at_its_work_limit() {
    let s = chain(8);
    s.set_kernel_replay(false);
    s.set_max_work(10_000);
    let e = s.run(&ones(&s)).unwrap_err();
    let (requested, limit, raise) = budget_of(&e).unwrap_or_else(|| panic!("not a budget error: {e}"));
    assert!(limit == 10_000 && requested > 10_000, "{e}");
    assert!(raise.contains("Session::set_max_work") && e.to_string().contains("MatMul"), "{e}");
    let big = RunOptions { max_work: Some(8 * 4096), ..Default::default() };
    assert!(s.run_with(&ones(&s), &big).is_ok());
    s.set_max_work(pixelgrad_onnx::DEFAULT_MAX_WORK);
    assert_eq!(s.max_work(), 1 << 40);
    let y = s.run(&ones(&s)).unwrap()[0].1.to_host().unwrap().to_f32();
    assert!(y.iter().all(|&v| (v - 1.0).abs() < 1e-5), "{y:?}");
}

/// A cancelled token stops a run with `Error::Cancelled`, at the first node, also where that
/// node runs on the host (no primitive the device could stop); the session and the device
/// run normally afterwards.
#[test]
fn a_cancelled_run_stops_and_the_session_stays_usable() {
    let s = chain(3);
    let cancel = CancelToken::new();
    cancel.cancel();
    let opts = RunOptions { cancel: Some(cancel), ..Default::default() };
    let e = s.run_with(&ones(&s), &opts).unwrap_err();
    assert!(matches!(&e, OnnxError::Engine { source: CoreError::Cancelled { .. }, .. }), "{e}");
    assert!(s.run(&ones(&s)).is_ok());

    // shape arithmetic only: Shape -> Concat, evaluated on the host
    let host = model(
        13,
        vec![node("Shape", &["x"], &["s"], vec![]), node("Concat", &["s", "s"], &["y"], vec![int("axis", 0)])],
        &[("x", &[2, 3])],
        &["y"],
        vec![],
    );
    let s = Session::new(Model::from_bytes(&host).unwrap(), &cpu()).unwrap();
    let x = || vec![("x", Input::from(Tensor::ones(s.device(), [2, 3]).unwrap()))];
    assert_eq!(s.run(&x()).unwrap()[0].1.to_host().unwrap().to_i64("y").unwrap(), vec![2, 3, 2, 3]);
    let e = s.run_with(&x(), &opts).unwrap_err();
    assert!(matches!(&e, OnnxError::Engine { source: CoreError::Cancelled { .. }, context } if context.contains("Shape")), "{e}");
}

/// A replayed run (the kernels of an earlier run launched again, without the device's
/// per-primitive checks) still honours the token and the work limit.
#[test]
fn replayed_runs_keep_to_the_limits() {
    let s = chain(4);
    assert!(s.run(&ones(&s)).is_ok());
    assert!(s.run(&ones(&s)).is_ok());
    let replays = s.kernel_replays();
    let cancel = CancelToken::new();
    cancel.cancel();
    let e = s.run_with(&ones(&s), &RunOptions { cancel: Some(cancel), ..Default::default() }).unwrap_err();
    assert!(matches!(&e, OnnxError::Engine { source: CoreError::Cancelled { .. }, .. }), "{e}");
    let e = s.run_with(&ones(&s), &RunOptions { max_work: Some(4096), ..Default::default() }).unwrap_err();
    assert!(budget_of(&e).is_some(), "{e}");
    assert_eq!(s.kernel_replays(), replays, "a refused run replayed nothing");
}

/// Polls a future that never waits (the CPU backend's reads complete at once).
fn ready<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the run waited"),
    }
}

/// An asynchronous run awaits `RunOptions::pause` between nodes (every 4096 steps of work
/// here): what lets a browser's event loop run an `AbortSignal` handler mid-run. A token
/// cancelled during the third pause stops the run before the next node; blocking runs never
/// await the pause.
#[test]
fn an_async_run_pauses_between_nodes_so_a_cancel_can_arrive() {
    use std::cell::Cell;
    use std::rc::Rc;
    let s = chain(6);
    s.set_kernel_replay(false);
    let cancel = CancelToken::new();
    let pauses = Rc::new(Cell::new(0));
    let pause: pixelgrad_onnx::Pause = {
        let (pauses, cancel) = (pauses.clone(), cancel.clone());
        Rc::new(move || {
            pauses.set(pauses.get() + 1);
            if pauses.get() == 3 {
                cancel.cancel();
            }
            Box::pin(async {})
        })
    };
    let opts = RunOptions { cancel: Some(cancel), pause: Some(pause.clone()), pause_every: 4096, ..Default::default() };
    let e = ready(s.run_async_with(&ones(&s), &opts)).unwrap_err();
    assert!(matches!(&e, OnnxError::Engine { source: CoreError::Cancelled { .. }, context } if context.contains("MatMul")), "{e}");
    assert_eq!(pauses.get(), 3);
    // without a cancel, every due pause is awaited and the run completes; blocking runs ignore it
    let opts = RunOptions { pause: Some(pause), pause_every: 0, ..Default::default() };
    assert!(ready(s.run_async_with(&ones(&s), &opts)).is_ok());
    assert_eq!(pauses.get(), 3 + 6);
    assert!(s.run_with(&ones(&s), &opts).is_ok());
    assert_eq!(pauses.get(), 9);
}

/// A model read from bytes cannot make the importer open another file: an initializer whose
/// data lives in an external file (`data_location = EXTERNAL`, a `location` naming any path)
/// is refused by name (`Model::from_bytes` reads only the bytes it is given; reading from a
/// model's folder is `Model::load`'s, with the checks of `tests/external.rs`).
#[test]
fn external_data_is_refused() {
    use pixelgrad_onnx::proto::StringStringEntryProto;
    let mut w = f32s("w", &[4], &[]);
    w.data_location = 1;
    w.external_data = vec![StringStringEntryProto { key: "location".into(), value: "/etc/passwd".into() }];
    let bytes = model(13, vec![node("Add", &["x", "w"], &["y"], vec![])], &[("x", &[4])], &["y"], vec![w]);
    let e = load_err(&bytes);
    assert!(matches!(&e, OnnxError::UnsupportedModel(m) if m.contains("external file") && m.contains("initializer 'w'")), "{e}");
}

/// A uint8 initializer.
fn u8s(name: &str, dims: &[i64], v: &[u8]) -> pixelgrad_onnx::proto::TensorProto {
    pixelgrad_onnx::proto::TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: pixelgrad_onnx::proto::data_type::UINT8,
        raw_data: v.to_vec(),
        ..Default::default()
    }
}

/// A `MatMulNBits` model `y = x · W` (x `[1, 32]` a graph input) whose node has `attrs` and
/// whose inputs after `x` are `inputs` (initializers `inits`, or, when named in `dev`, the
/// `Exp` on the device of a graph input `NAME_in` of shape `[4]`).
fn nbits_model(attrs: &[(&str, i64)], inputs: &[&str], inits: Vec<pixelgrad_onnx::proto::TensorProto>, dev: &[&str]) -> Vec<u8> {
    let mut ins = vec!["x"];
    ins.extend(inputs);
    let mut n = node("MatMulNBits", &ins, &["y"], attrs.iter().map(|(k, v)| int(k, *v)).collect());
    n.domain = "com.microsoft".into();
    let in_names: Vec<String> = dev.iter().map(|d| format!("{d}_in")).collect();
    let mut graph_inputs: Vec<(&str, &[i64])> = vec![("x", &[1, 32])];
    graph_inputs.extend(in_names.iter().map(|d| (d.as_str(), &[4i64][..])));
    let mut nodes: Vec<_> = dev.iter().zip(&in_names).map(|(d, i)| node("Exp", &[i], &[d], vec![])).collect();
    nodes.push(n);
    model(17, nodes, &graph_inputs, &["y"], inits)
}

fn nbits_run(bytes: &[u8]) -> Result<Vec<f32>, OnnxError> {
    let dev = cpu();
    let s = Session::new(Model::from_bytes(bytes)?, &dev)?;
    let x = HostTensor::f32(vec![1, 32], vec![1.0; 32]);
    let mut feeds = vec![("x", Input::Host(x))];
    if bytes.windows(9).any(|w| w == b"scales_in") {
        feeds.push(("scales_in", Input::Host(HostTensor::f32(vec![4], vec![0.0; 4]))));
    }
    Ok(s.run(&feeds)?[0].1.to_host()?.to_f32())
}

/// `MatMulNBits` nodes whose attributes or packed inputs disagree (wrong blob size, K or N
/// out of range, 3-bit blocks, a block size that is no power of two, scale or zero point
/// counts, act-order `g_idx`, scales computed on the device) are typed errors naming what is
/// wrong, never a panic or an allocation sized by the bad value; the well-formed model runs
/// and gives `x · W` (every 4-bit value 9, zero point 8, scale 1: W all ones).
#[test]
fn matmulnbits_with_bad_attributes_or_blobs_are_typed_errors() {
    let attrs = |k: i64, n: i64, bits: i64, block: i64| vec![("K", k), ("N", n), ("bits", bits), ("block_size", block)];
    let good = || (u8s("b", &[2, 2, 8], &[0x99; 32]), f32s("s", &[4], &[1.0; 4]));
    let (b, s) = good();
    assert_eq!(nbits_run(&nbits_model(&attrs(32, 2, 4, 16), &["b", "s"], vec![b, s], &[])).unwrap(), vec![32.0, 32.0]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (nbits_model(&attrs(32, 2, 3, 16), &["b", "s"], vec![good().0, good().1], &[]), "attribute 'bits' is 3"),
        (nbits_model(&attrs(32, 2, 4, 24), &["b", "s"], vec![good().0, good().1], &[]), "attribute 'block_size' is 24"),
        (nbits_model(&attrs(32, 2, 4, 8), &["b", "s"], vec![good().0, good().1], &[]), "attribute 'block_size' is 8"),
        (nbits_model(&attrs(1 << 40, 2, 4, 16), &["b", "s"], vec![good().0, good().1], &[]), "attribute 'K' is 1099511627776"),
        (nbits_model(&attrs(32, i64::MAX, 4, 16), &["b", "s"], vec![good().0, good().1], &[]), "attribute 'N' is 9223372036854775807"),
        (nbits_model(&attrs(32, -2, 4, 16), &["b", "s"], vec![good().0, good().1], &[]), "attribute 'N' is -2"),
        (nbits_model(&attrs(64, 2, 4, 16), &["b", "s"], vec![good().0, good().1], &[]), "its last axis must be K = 64"),
        (
            nbits_model(&attrs(32, 2, 4, 16), &["b", "s"], vec![u8s("b", &[2, 2, 7], &[0x99; 28]), good().1], &[]),
            "input B has shape [2, 2, 7]",
        ),
        (nbits_model(&attrs(32, 2, 8, 16), &["b", "s"], vec![good().0, good().1], &[]), "input B has shape [2, 2, 8]"),
        (nbits_model(&attrs(32, 2, 4, 16), &["b", "s"], vec![good().0, f32s("s", &[3], &[1.0; 3])], &[]), "expected 4 floats"),
        (
            nbits_model(&attrs(32, 2, 4, 16), &["b", "s", "z"], vec![good().0, good().1, u8s("z", &[4], &[0; 4])], &[]),
            "holds 1 bytes for each of N = 2 rows",
        ),
        (nbits_model(&attrs(32, 2, 4, 16), &["b", "s", "", "g"], vec![good().0, good().1, i64s("g", &[32], &[0; 32])], &[]), "g_idx"),
        (nbits_model(&attrs(32, 2, 4, 16), &["b", "scales"], vec![good().0], &["scales"]), "scales (input 2) is computed on the device"),
    ];
    for (bytes, want) in cases {
        match nbits_run(&bytes) {
            Err(e @ OnnxError::Node { .. }) => assert!(e.to_string().contains(want), "{e} (wanted '{want}')"),
            other => panic!("wanted an error with '{want}', got {other:?}"),
        }
    }
    // the process is fine: the good model still runs
    let (b, s) = good();
    assert!(nbits_run(&nbits_model(&attrs(32, 2, 4, 16), &["b", "s"], vec![b, s], &[])).is_ok());
}

/// `GatherBlockQuantized` with `uint8` data, scales of the wrong shape, a bad block size or
/// `int4` data whose packed bytes do not match its shape, and `DynamicQuantizeMatMul` with a
/// float `B` or a bias of the wrong shape, are typed errors naming what is wrong; none panics.
#[test]
fn block_quantized_gather_and_dynamic_matmul_refusals_name_what_is_wrong() {
    let gbq = |d: pixelgrad_onnx::proto::TensorProto, s: &[i64], block: i64| {
        let mut g = node("GatherBlockQuantized", &["d", "i", "s"], &["y"], vec![int("block_size", block)]);
        g.domain = "com.microsoft".into();
        let n: usize = s.iter().product::<i64>() as usize;
        let bytes = model(17, vec![g], &[], &["y"], vec![d, i64s("i", &[1], &[0]), f32s("s", s, &vec![1.0; n])]);
        let s = Session::new(Model::from_bytes(&bytes)?, &cpu())?;
        s.run(&[]).map(|o| o[0].1.to_host().unwrap().to_f32())
    };
    let int4 = |dims: &[i64], bytes: usize| {
        let mut d = u8s("d", dims, &vec![0x21; bytes]);
        d.data_type = pixelgrad_onnx::proto::data_type::INT4;
        d
    };
    // a good one: every value 1 (low nibble) or 2 (high), scale 1, no zero point
    assert_eq!(gbq(int4(&[2, 16], 16), &[2, 1], 16).unwrap(), [1.0, 2.0].repeat(8));
    for (got, want) in [
        (gbq(u8s("d", &[2, 16], &[0; 32]), &[2, 1], 16), "data is uint8"),
        (gbq(int4(&[2, 16], 16), &[2, 2], 16), "expected floats of shape [2, 1]"),
        (gbq(int4(&[2, 16], 16), &[2, 2], 8), "attribute 'block_size' is 8"),
        (gbq(int4(&[2, 16], 15), &[2, 1], 16), "15 raw bytes for shape [2, 16] of int4"),
    ] {
        let e = got.unwrap_err();
        assert!(e.to_string().contains(want), "{e} (wanted '{want}')");
    }
    let dq = |b: pixelgrad_onnx::proto::TensorProto, bias: Option<pixelgrad_onnx::proto::TensorProto>| {
        let mut ins = vec!["x", "b", "s"];
        let mut inits = vec![b, f32s("s", &[], &[0.5])];
        if let Some(bias) = bias {
            ins.extend(["", "bias"]);
            inits.push(bias);
        }
        let mut n = node("DynamicQuantizeMatMul", &ins, &["y"], vec![]);
        n.domain = "com.microsoft".into();
        let bytes = model(17, vec![n], &[("x", &[1, 4])], &["y"], inits);
        let s = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap();
        s.run(&[("x", Input::Host(HostTensor::f32(vec![1, 4], vec![0.5, -1.0, 2.0, 0.0])))]).map(|o| o[0].1.to_host().unwrap().to_f32())
    };
    let e = dq(f32s("b", &[4, 2], &[1.0; 8]), None).unwrap_err();
    assert!(matches!(&e, OnnxError::Node { .. }) && e.to_string().contains("uint8 or int8"), "{e}");
    let e = dq(u8s("b", &[4, 2], &[1; 8]), Some(f32s("bias", &[3], &[0.0; 3]))).unwrap_err();
    assert!(matches!(&e, OnnxError::Node { .. }) && e.to_string().contains("bias (input 4) has shape [3]"), "{e}");
    // B all 1 (uint8, no zero point), scale 0.5: each output is 0.5 · Σ x, x quantised and back
    let y = dq(u8s("b", &[4, 2], &[1; 8]), Some(f32s("bias", &[2], &[10.0, 20.0]))).unwrap();
    assert!((y[0] - 10.75).abs() < 0.02 && (y[1] - 20.75).abs() < 0.02, "{y:?}");
}
