//! Rotary position embeddings (onnxruntime's `com.microsoft` `RotaryEmbedding`, opset 23's
//! `RotaryEmbedding`), `EmbedLayerNormalization` and opset 23's `RMSNormalization` beyond their
//! per-operator fixtures (`ops_cpu.rs`, `ops_wgpu.rs`, `ops_webgl.rs` compare those with
//! onnxruntime and, for opset 23, with the reference evaluator of a newer `onnx`): bad inputs
//! and attributes are typed errors naming the node, autodiff's gradients of their weights
//! (and, through a weight in front, of their input) equal finite differences, new position ids
//! are read on every run, and the opset 23 fixtures pass in the WebGL1 mode too.

mod common;
mod graphs;

use graphs::*;
use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::{Mode, Module};
use pixelgrad_onnx::proto::{data_type, NodeProto, TensorProto};
use pixelgrad_onnx::{HostTensor, Input, Model, OnnxError, OnnxLayer, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn ms(mut n: NodeProto) -> NodeProto {
    n.domain = "com.microsoft".into();
    n
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * scale).collect()
}

/// An int32 initializer.
fn i32s(name: &str, dims: &[i64], v: &[i32]) -> TensorProto {
    TensorProto { name: name.into(), dims: dims.to_vec(), data_type: data_type::INT32, int32_data: v.to_vec(), ..Default::default() }
}

/// `com.microsoft` `RotaryEmbedding` of `x` [2, 3, 16] (2 heads of 8) at `pos`, with caches
/// `[8, width]`.
fn ms_rope(pos: TensorProto, width: i64, attrs: Vec<pixelgrad_onnx::proto::AttributeProto>) -> Vec<u8> {
    let n = (8 * width) as usize;
    model(
        17,
        vec![ms(node("RotaryEmbedding", &["x", "p", "c", "s"], &["y"], attrs))],
        &[("x", &[2, 3, 16])],
        &["y"],
        vec![pos, f32s("c", &[8, width], &ramp(n, 0.1)), f32s("s", &[8, width], &ramp(n, 0.2))],
    )
}

/// `com.microsoft` `EmbedLayerNormalization` over ids `[2, 3]` (vocabulary 7, 5 positions, 2
/// segments, hidden 8) of the given inputs (names `i g w pe se ga be m pi`), its output added
/// to the graph input `x` [2, 3, 8].
fn embed_ln(ins: &[&str], ids: &[i32], attrs: Vec<pixelgrad_onnx::proto::AttributeProto>, gamma: usize) -> Vec<u8> {
    let inits = vec![
        i32s("i", &[2, 3], ids),
        i32s("g", &[2, 3], &[0, 1, 1, 0, 0, 1]),
        f32s("w", &[7, 8], &ramp(56, 0.1)),
        f32s("pe", &[5, 8], &ramp(40, 0.05)),
        f32s("se", &[2, 8], &ramp(16, 0.07)),
        f32s("ga", &[gamma as i64], &ramp(gamma, 0.1).iter().map(|v| v + 1.0).collect::<Vec<_>>()),
        f32s("be", &[8], &ramp(8, 0.03)),
        i32s("m", &[2, 3], &[1, 1, 0, 1, 0, 0]),
    ];
    model(
        17,
        vec![ms(node("EmbedLayerNormalization", ins, &["e"], attrs)), node("Add", &["e", "x"], &["y"], vec![])],
        &[("x", &[2, 3, 8])],
        &["y"],
        inits,
    )
}

/// The opset 23 fixtures (tag `opset23`) in the WebGL1 mode (headless EGL), within the same
/// tolerance of the reference evaluator (the contrib cases run there in `contrib.rs`).
#[test]
fn opset23_cases_match_the_reference_on_webgl1() {
    let opts = pixelgrad_webgl::WebGlOptions { self_test: false, webgl1: true, ..Default::default() };
    let dev = Device::new(pixelgrad_webgl::WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context"));
    let cases: Vec<_> = common::cases("ops").into_iter().filter(|c| c.tags.iter().any(|t| t == "opset23")).collect();
    assert!(cases.len() >= 14, "{} opset 23 cases", cases.len());
    common::check_cases(&dev, "ops", &cases, 1);
}

/// `pixelgrad inspect` (the operator table) calls each fixture's operator supported, by its
/// domain, before anything runs; the contrib RotaryEmbedding's line says what its `scale`
/// does.
#[test]
fn inspect_reports_the_operators_supported() {
    for (case, op, domain) in [
        ("ms_rotary_3d_scale", "RotaryEmbedding", "com.microsoft"),
        ("ms_embed_layernorm_all", "EmbedLayerNormalization", "com.microsoft"),
        ("rotary23_3d", "RotaryEmbedding", ""),
        ("rmsnorm23", "RMSNormalization", ""),
    ] {
        let report = pixelgrad_onnx::inspect::inspect_file(common::fixtures().join("ops").join(case).join("model.onnx")).unwrap();
        let o = report.operators.iter().find(|o| o.op_type == op).unwrap_or_else(|| panic!("{case}: no {op}"));
        assert!(o.supported && o.domain == domain && report.refused.is_empty(), "{case}: {o:?} {:?}", report.refused);
        if domain == "com.microsoft" && op == "RotaryEmbedding" {
            assert!(o.note.is_some_and(|n| n.contains("scale attribute has no effect")), "{o:?}");
        }
    }
}

/// Position ids fed on the host are read on every run: a second run of one session with other
/// positions (same shapes, so the recorded kernels replay) equals a fresh session's run.
#[test]
fn new_positions_are_read_on_every_run() {
    let dev = cpu();
    let bytes = model(
        17,
        vec![ms(node("RotaryEmbedding", &["x", "p", "c", "s"], &["y"], vec![]))],
        &[("x", &[2, 3, 16])],
        &["y"],
        vec![f32s("c", &[8, 4], &ramp(32, 0.1)), f32s("s", &[8, 4], &ramp(32, 0.2))],
    );
    // p is a graph input too (int64 [2, 3])
    let mut m = pixelgrad_onnx::proto::decode_model(&bytes).unwrap();
    m.graph.as_mut().unwrap().input.push(info("p", I64, &[2, 3]));
    let bytes = pixelgrad_onnx::proto::encode_model(&m);
    let x = || Input::Host(HostTensor::f32(vec![2, 3, 16], ramp(96, 0.3)));
    let p = |v: &[i64]| Input::Host(HostTensor::i64(vec![2, 3], v.to_vec()));
    let run = |s: &Session, pos: &[i64]| s.run(&[("x", x()), ("p", p(pos))]).unwrap()[0].1.to_host().unwrap().to_f32();
    let s = Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap();
    let first = run(&s, &[0, 1, 2, 3, 4, 5]);
    let (a, b) = ([7, 6, 5, 0, 0, 1], [1, 1, 1, 2, 2, 2]);
    let second = run(&s, &a);
    let third = run(&s, &b);
    assert_ne!(first, second);
    let fresh = |pos: &[i64]| run(&Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap(), pos);
    assert_eq!(second, fresh(&a));
    assert_eq!(third, fresh(&b));
}

/// Every bad input shape and attribute value is a node error naming the node and what is
/// wrong; the session that refused one runs a good input afterwards.
#[test]
fn bad_inputs_and_attributes_are_node_errors() {
    let start = |p: i64| i64s("p", &[1], &[p]);
    let full = ["i", "g", "w", "pe", "se", "ga", "be", "m"];
    let rms23 = |scale: &[i64], attrs| {
        let n = scale.iter().product::<i64>() as usize;
        model(
            23,
            vec![node("RMSNormalization", &["x", "s"], &["y"], attrs)],
            &[("x", &[2, 3, 16])],
            &["y"],
            vec![f32s("s", scale, &ramp(n, 0.1))],
        )
    };
    let rope23 = |cache: &[i64], pos: bool, attrs| {
        let n = cache.iter().product::<i64>() as usize;
        let ins: &[&str] = if pos { &["x", "c", "s", "p"] } else { &["x", "c", "s"] };
        let mut inits = vec![f32s("c", cache, &ramp(n, 0.1)), f32s("s", cache, &ramp(n, 0.2))];
        if pos {
            inits.push(i64s("p", &[2, 3], &[0, 1, 2, 3, 4, 5]));
        }
        model(23, vec![node("RotaryEmbedding", ins, &["y"], attrs)], &[("x", &[2, 3, 16])], &["y"], inits)
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("rope dim without heads", ms_rope(start(0), 2, vec![int("rotary_embedding_dim", 4)]), "num_heads must be given"),
        ("rope packed", ms_rope(start(0), 4, vec![int("is_packed_batching", 1)]), "is_packed_batching"),
        ("rope interleaved", ms_rope(start(0), 4, vec![int("interleaved", 2)]), "interleaved is 2"),
        ("rope heads", ms_rope(start(0), 3, vec![]), "does not split into heads"),
        ("rope negative", ms_rope(start(0), 4, vec![int("num_heads", -2)]), "num_heads is -2"),
        ("rope cache width", ms_rope(start(0), 4, vec![int("rotary_embedding_dim", 4), int("num_heads", 2)]), "expected [max_sequence, 2]"),
        ("rope odd dim", ms_rope(start(0), 2, vec![int("rotary_embedding_dim", 5), int("num_heads", 2)]), "must be even"),
        ("rope position", ms_rope(start(6), 4, vec![]), "position 8 is outside the caches' 8 positions"),
        ("rope negative position", ms_rope(i64s("p", &[2, 3], &[0, 1, -1, 0, 1, 2]), 4, vec![]), "position -1 is outside"),
        ("rope position shape", ms_rope(i64s("p", &[3], &[0, 1, 2]), 4, vec![]), "position_ids has shape [3]"),
        ("rope position type", ms_rope(f32s("p", &[1], &[0.0]), 4, vec![]), "expected int64"),
        ("rope scale", ms_rope(start(0), 4, vec![float("scale", f32::NAN)]), "scale NaN"),
        ("embed segments", embed_ln(&["i", "g", "w", "pe", "", "ga", "be"], &[0; 6], vec![], 8), "go together"),
        ("embed id", embed_ln(&full, &[0, 1, 2, 3, 4, 7], vec![], 8), "input_ids holds 7, outside the table's 7 rows"),
        ("embed negative id", embed_ln(&full, &[0, -1, 2, 3, 4, 5], vec![], 8), "input_ids holds -1"),
        ("embed gamma", embed_ln(&full, &[0; 6], vec![], 5), "gamma (input 5) has shape [5]"),
        ("embed mask_index_type", embed_ln(&full, &[0; 6], vec![int("mask_index_type", 2)], 8), "mask_index_type is 2"),
        ("embed epsilon", embed_ln(&full, &[0; 6], vec![float("epsilon", -1.0)], 8), "epsilon -1"),
        ("embed attr", embed_ln(&full, &[0; 6], vec![int("axis", 1)], 8), "'axis'"),
        ("rms23 scale", rms23(&[3], vec![]), "scale has shape [3]; it must broadcast to"),
        ("rms23 axis", rms23(&[16], vec![int("axis", 3)]), "axis 3 is out of range"),
        ("rope23 heads", rope23(&[8, 4], true, vec![]), "num_heads is required"),
        ("rope23 split", rope23(&[8, 4], true, vec![int("num_heads", 3)]), "does not split into 3 heads"),
        (
            "rope23 caches",
            rope23(&[8, 4], false, vec![int("num_heads", 2)]),
            "without position_ids the caches must be [batch, sequence, 4]",
        ),
        ("rope23 positions", rope23(&[4, 4], true, vec![int("num_heads", 2)]), "position 4 is outside the caches' 4 positions"),
    ];
    let dev = cpu();
    for (what, bytes, want) in cases {
        let s = Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap();
        let shape = if what.starts_with("embed") { vec![2, 3, 8] } else { vec![2, 3, 16] };
        let n = shape.iter().product();
        let e = s.run(&[("x", Input::Host(HostTensor::f32(shape, ramp(n, 0.3))))]).map(|_| ()).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, OnnxError::Node { .. }), "{what}: {msg}");
        assert!(msg.contains(want), "{what}: {msg}");
        assert!(msg.contains(&format!("'{}'", s.model().nodes[0].name)), "{what}: the message names the node: {msg}");
    }
    // the device stays usable: a good rotation afterwards keeps each head's norm
    let good = Session::new(Model::from_bytes(&ms_rope(start(1), 4, vec![])).unwrap(), &dev).unwrap();
    let x = ramp(96, 0.3);
    let y = good.run(&[("x", Input::Host(HostTensor::f32(vec![2, 3, 16], x.clone())))]).unwrap()[0].1.to_host().unwrap().to_f32();
    assert_eq!(y.len(), 96);
    assert!(y.iter().zip(&x).any(|(a, b)| (a - b).abs() > 1e-3), "the rotation changed nothing");
    // an opset the importer does not know is refused when the model is read
    let e = Model::from_bytes(&model(24, vec![node("Relu", &["x"], &["y"], vec![])], &[("x", &[2])], &["y"], vec![])).unwrap_err();
    assert!(e.to_string().contains("opset 24"), "{e}");
}

/// The gradient autodiff gives each weight (the caches, the embedding tables, gamma, beta,
/// the scale, and a weight multiplied into the rotated input) equals the central finite
/// difference of the loss `Σ y · w` in that weight.
#[test]
fn weight_gradients_equal_finite_differences() {
    let x16 = [("x", &[2i64, 3, 16][..])];
    let k = || f32s("k", &[16], &ramp(16, 0.1).iter().map(|v| v + 1.0).collect::<Vec<_>>());
    let caches = |w: i64| vec![f32s("c", &[8, w], &ramp(8 * w as usize, 0.1)), f32s("s", &[8, w], &ramp(8 * w as usize, 0.15))];
    let pos = || i64s("p", &[2, 3], &[0, 3, 5, 7, 1, 2]);
    let rope_ms = |attrs| {
        let mut inits = vec![k(), pos()];
        inits.extend(caches(2));
        model(
            17,
            vec![node("Mul", &["x", "k"], &["xk"], vec![]), ms(node("RotaryEmbedding", &["xk", "p", "c", "s"], &["y"], attrs))],
            &x16,
            &["y"],
            inits,
        )
    };
    let rope23 = {
        let mut inits = vec![k(), pos()];
        inits.extend(caches(3));
        model(
            23,
            vec![
                node("Mul", &["x", "k"], &["xk"], vec![]),
                node("RotaryEmbedding", &["xk", "c", "s", "p"], &["y"], vec![int("num_heads", 2), int("rotary_embedding_dim", 6)]),
            ],
            &x16,
            &["y"],
            inits,
        )
    };
    let rms23 = model(
        23,
        vec![node("RMSNormalization", &["x", "s"], &["y"], vec![int("axis", 1)])],
        &x16,
        &["y"],
        vec![f32s("s", &[1, 16], &ramp(16, 0.2).iter().map(|v| v + 1.0).collect::<Vec<_>>())],
    );
    let models: Vec<(&str, Vec<u8>, Vec<usize>)> = vec![
        ("RotaryEmbedding (com.microsoft)", rope_ms(vec![int("rotary_embedding_dim", 4), int("num_heads", 2)]), vec![2, 3, 16]),
        (
            "RotaryEmbedding (com.microsoft, interleaved)",
            rope_ms(vec![int("rotary_embedding_dim", 4), int("num_heads", 2), int("interleaved", 1)]),
            vec![2, 3, 16],
        ),
        ("RotaryEmbedding (opset 23)", rope23, vec![2, 3, 16]),
        ("RMSNormalization", rms23, vec![2, 3, 16]),
        ("EmbedLayerNormalization", embed_ln(&["i", "g", "w", "pe", "se", "ga", "be", "m"], &[0, 1, 2, 6, 4, 5], vec![], 8), vec![2, 3, 8]),
    ];
    let dev = cpu();
    let mut checked = 0;
    for (op, bytes, shape) in models {
        let n: usize = shape.iter().product();
        let x = Tensor::from_vec(&dev, &ramp(n, 0.35), shape.clone()).unwrap();
        let w = Tensor::from_vec(&dev, &ramp(n, 0.13).iter().map(|v| v + 0.05).collect::<Vec<_>>(), shape).unwrap();
        let layer = OnnxLayer::new(Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap(), None, None).unwrap();
        let loss = |l: &OnnxLayer| l.forward(&x, Mode::Train).unwrap().mul(&w).unwrap().sum_all().unwrap();
        loss(&layer).backward().unwrap();
        let params = layer.session().params();
        assert!(!params.is_empty(), "{op}: no weights");
        for (name, p) in params {
            let grad = p.grad().unwrap_or_else(|| panic!("{op}: no gradient for {name}")).to_vec().unwrap();
            let base = p.tensor().to_vec().unwrap();
            let dims = p.tensor().dims().to_vec();
            let mut nonzero = false;
            for i in [0, 1, base.len() / 2, base.len() - 1] {
                let h = 1e-2f32;
                let at = |d: f32| {
                    let mut v = base.clone();
                    v[i] += d;
                    p.set(&Tensor::from_vec(&dev, &v, dims.clone()).unwrap()).unwrap();
                    let _g = pixelgrad_core::no_grad();
                    loss(&layer).item().unwrap()
                };
                let fd = (at(h) - at(-h)) / (2.0 * h);
                p.set(&Tensor::from_vec(&dev, &base, dims.clone()).unwrap()).unwrap();
                let tol = 2e-2 * fd.abs().max(grad[i].abs()).max(0.1);
                assert!((fd - grad[i]).abs() <= tol, "{op} {name}[{i}]: autodiff {}, finite difference {fd}", grad[i]);
                nonzero |= grad[i].abs() > 1e-4;
                checked += 1;
            }
            assert!(nonzero || name == "c" || name == "s", "{op} {name}: every checked gradient is zero");
        }
    }
    assert!(checked >= 40, "{checked} gradients checked");
}
