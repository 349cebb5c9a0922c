//! onnxruntime's transformer contrib operators (fused GELUs, skip and RMS layer
//! normalisations) beyond their per-operator fixtures (`ops_cpu.rs`, `ops_wgpu.rs` and
//! `ops_webgl.rs` compare those with onnxruntime): the same fixtures in the WebGL1 mode, `Gelu`
//! runs by its domain, bad inputs and attributes are typed errors naming the node, and
//! autodiff's gradients of their weights equal finite differences.

mod common;
mod graphs;

use graphs::*;
use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::{Mode, Module};
use pixelgrad_onnx::{HostTensor, Input, Model, OnnxError, OnnxLayer, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn ms(mut n: pixelgrad_onnx::proto::NodeProto) -> pixelgrad_onnx::proto::NodeProto {
    n.domain = "com.microsoft".into();
    n
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * scale).collect()
}

fn run1(bytes: &[u8], x: &[usize]) -> Result<Vec<f32>, OnnxError> {
    let s = Session::new(Model::from_bytes(bytes)?, &cpu())?;
    let n = x.iter().product();
    let out = s.run(&[("x", Input::Host(HostTensor::f32(x.to_vec(), ramp(n, 0.4))))])?;
    Ok(out[0].1.to_host()?.to_f32())
}

/// The contrib operators' per-operator fixtures (tag `contrib`) in the WebGL1 mode (headless
/// EGL; Mesa llvmpipe without a GPU), within the same tolerance of onnxruntime.
#[test]
fn contrib_cases_match_onnxruntime_on_webgl1() {
    let opts = pixelgrad_webgl::WebGlOptions { self_test: false, webgl1: true, ..Default::default() };
    let dev = Device::new(pixelgrad_webgl::WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context"));
    let cases: Vec<_> = common::cases("ops").into_iter().filter(|c| c.tags.iter().any(|t| t == "contrib")).collect();
    assert!(cases.len() >= 25, "{} contrib cases", cases.len());
    common::check_cases(&dev, "ops", &cases, 1);
}

/// The default domain's `Gelu` (opset 20, `approximate`) and onnxruntime's (no attributes)
/// are two operators of one name: each node runs its own domain's.
#[test]
fn gelu_runs_by_its_domain() {
    let x = [("x", &[2i64, 4][..])];
    let tanh = model(20, vec![node("Gelu", &["x"], &["y"], vec![string("approximate", "tanh")])], &x, &["y"], vec![]);
    let got = run1(&tanh, &[2, 4]).unwrap();
    let c = (2.0f32 / std::f32::consts::PI).sqrt();
    for (g, v) in got.iter().zip(ramp(8, 0.4)) {
        let want = 0.5 * v * (1.0 + (c * (v + 0.044715 * v * v * v)).tanh());
        assert!((g - want).abs() < 1e-5, "tanh GELU of {v}: {g}, want {want}");
    }
    let contrib = model(20, vec![ms(node("Gelu", &["x"], &["y"], vec![]))], &x, &["y"], vec![]);
    let exact = run1(&contrib, &[2, 4]).unwrap();
    // the exact (erf) GELU at 0.8, the ramp's second value: 0.8 Φ(0.8)
    assert!((exact[1] - 0.8 * 0.788_144_6).abs() < 1e-5, "{exact:?}");
    let with_attr = model(20, vec![ms(node("Gelu", &["x"], &["y"], vec![string("approximate", "tanh")]))], &x, &["y"], vec![]);
    let e = run1(&with_attr, &[2, 4]).unwrap_err();
    assert!(matches!(e, OnnxError::Node { .. }) && e.to_string().contains("'approximate'"), "{e}");
}

/// Every bad input shape and attribute value is a node error naming the node and what is
/// wrong; the session that refused one runs a good input afterwards.
#[test]
fn bad_inputs_and_attributes_are_node_errors() {
    let x3 = [("x", &[2i64, 3, 4][..])];
    let v = |name: &str, n: usize| f32s(name, &[n as i64], &ramp(n, 0.1));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "fastgelu bias",
            model(13, vec![ms(node("FastGelu", &["x", "b"], &["y"], vec![]))], &x3, &["y"], vec![v("b", 3)]),
            "bias (input 1) has shape [3]",
        ),
        (
            "biasgelu bias",
            model(13, vec![ms(node("BiasGelu", &["x", "b"], &["y"], vec![]))], &x3, &["y"], vec![f32s("b", &[3, 4], &ramp(12, 0.1))]),
            "bias B",
        ),
        (
            "quickgelu alpha",
            model(13, vec![ms(node("QuickGelu", &["x"], &["y"], vec![float("alpha", f32::NAN)]))], &x3, &["y"], vec![]),
            "alpha NaN",
        ),
        ("quickgelu attr", model(13, vec![ms(node("QuickGelu", &["x"], &["y"], vec![float("beta", 1.0)]))], &x3, &["y"], vec![]), "'beta'"),
        (
            "rms scale",
            model(17, vec![node("SimplifiedLayerNormalization", &["x", "s"], &["y"], vec![int("axis", 1)])], &x3, &["y"], vec![v("s", 4)]),
            "scale has shape [4]",
        ),
        (
            "rms axis",
            model(17, vec![node("SimplifiedLayerNormalization", &["x", "s"], &["y"], vec![int("axis", 3)])], &x3, &["y"], vec![v("s", 4)]),
            "axis 3 is out of range",
        ),
        (
            "rms epsilon",
            model(
                17,
                vec![node("SimplifiedLayerNormalization", &["x", "s"], &["y"], vec![float("epsilon", -1.0)])],
                &x3,
                &["y"],
                vec![v("s", 4)],
            ),
            "epsilon -1",
        ),
        (
            "skip rank",
            model(
                13,
                vec![ms(node("SkipLayerNormalization", &["x", "k", "g"], &["y"], vec![]))],
                &[("x", &[1, 2, 3, 4])],
                &["y"],
                vec![f32s("k", &[1, 2, 3, 4], &ramp(24, 0.1)), v("g", 4)],
            ),
            "expected [batch, sequence, hidden] or [tokens, hidden]",
        ),
        (
            "skip shape",
            model(
                13,
                vec![ms(node("SkipLayerNormalization", &["x", "k", "g"], &["y"], vec![]))],
                &x3,
                &["y"],
                vec![f32s("k", &[2, 1, 4], &ramp(8, 0.1)), v("g", 4)],
            ),
            "skip has shape [2, 1, 4]",
        ),
        (
            "skip gamma",
            model(
                13,
                vec![ms(node("SkipLayerNormalization", &["x", "k", "g"], &["y"], vec![]))],
                &x3,
                &["y"],
                vec![f32s("k", &[3, 4], &ramp(12, 0.1)), v("g", 3)],
            ),
            "gamma (input 2) has shape [3]",
        ),
        (
            "skip beta",
            model(
                13,
                vec![ms(node("SkipLayerNormalization", &["x", "k", "g", "be"], &["y"], vec![]))],
                &x3,
                &["y"],
                vec![f32s("k", &[3, 4], &ramp(12, 0.1)), v("g", 4), v("be", 5)],
            ),
            "beta (input 3) has shape [5]",
        ),
        (
            "simplified mean",
            model(
                13,
                vec![ms(node("SkipSimplifiedLayerNormalization", &["x", "k", "g"], &["y", "m"], vec![]))],
                &x3,
                &["y", "m"],
                vec![f32s("k", &[3, 4], &ramp(12, 0.1)), v("g", 4)],
            ),
            "output 1 (mean)",
        ),
        (
            "simplified epsilon",
            model(
                13,
                vec![ms(node("SkipSimplifiedLayerNormalization", &["x", "k", "g"], &["y"], vec![float("epsilon", f32::INFINITY)]))],
                &x3,
                &["y"],
                vec![f32s("k", &[3, 4], &ramp(12, 0.1)), v("g", 4)],
            ),
            "epsilon inf",
        ),
    ];
    for (what, bytes, want) in cases {
        let s = Session::new(Model::from_bytes(&bytes).unwrap(), &cpu()).unwrap();
        let x = Input::Host(HostTensor::f32(vec![2, 3, 4], ramp(24, 0.3)));
        let x = if what == "skip rank" { Input::Host(HostTensor::f32(vec![1, 2, 3, 4], ramp(24, 0.3))) } else { x };
        let e = s.run(&[("x", x)]).map(|_| ()).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, OnnxError::Node { .. }), "{what}: {msg}");
        assert!(msg.contains(want), "{what}: {msg}");
        // nodes without a name are called `OpType_index`
        assert!(msg.contains(&format!("'{}'", s.model().nodes[0].name)), "{what}: the message names the node: {msg}");
    }
    // the session stays usable: a good SkipLayerNormalization after a refused one
    let good = model(
        13,
        vec![ms(node("SkipLayerNormalization", &["x", "k", "g"], &["y"], vec![]))],
        &x3,
        &["y"],
        vec![f32s("k", &[3, 4], &ramp(12, 0.1)), f32s("g", &[4], &[1.0; 4])],
    );
    let y = run1(&good, &[2, 3, 4]).unwrap();
    // each row of y has mean 0 and mean square 1
    for row in y.chunks(4) {
        let m: f32 = row.iter().sum::<f32>() / 4.0;
        let ms: f32 = row.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!(m.abs() < 1e-5 && (ms - 1.0).abs() < 1e-4, "{row:?}");
    }
}

/// The gradient autodiff gives each weight of a contrib operator (the bias and skip inside the
/// normalisation, gamma, beta, the GELU biases) equals the central finite difference of the
/// loss `Σ y · w` in that weight.
#[test]
fn weight_gradients_equal_finite_differences() {
    let x3 = [("x", &[2i64, 3, 4][..])];
    let k = f32s("k", &[3, 4], &ramp(12, 0.2));
    let vec4 = |n: &str, s: f32| f32s(n, &[4], &ramp(4, s).iter().map(|v| v + 1.0).collect::<Vec<_>>());
    let models: Vec<(&str, Vec<u8>)> = vec![
        ("FastGelu", model(13, vec![ms(node("FastGelu", &["x", "b"], &["y"], vec![]))], &x3, &["y"], vec![vec4("b", 0.3)])),
        ("BiasGelu", model(13, vec![ms(node("BiasGelu", &["x", "b"], &["y"], vec![]))], &x3, &["y"], vec![vec4("b", 0.3)])),
        (
            "SimplifiedLayerNormalization",
            model(
                17,
                vec![node("SimplifiedLayerNormalization", &["x", "s"], &["y"], vec![int("axis", 1)])],
                &x3,
                &["y"],
                vec![f32s("s", &[3, 4], &ramp(12, 0.3))],
            ),
        ),
        (
            "SkipLayerNormalization",
            model(
                13,
                vec![ms(node("SkipLayerNormalization", &["x", "k", "g", "be", "bi"], &["y", "", "", "sum"], vec![]))],
                &x3,
                &["y"],
                vec![k.clone(), vec4("g", 0.2), vec4("be", 0.1), vec4("bi", 0.4)],
            ),
        ),
        (
            "SkipSimplifiedLayerNormalization",
            model(
                13,
                vec![ms(node("SkipSimplifiedLayerNormalization", &["x", "k", "g", "bi"], &["y"], vec![float("epsilon", 1e-6)]))],
                &x3,
                &["y"],
                vec![k, vec4("g", 0.2), vec4("bi", 0.4)],
            ),
        ),
    ];
    let dev = cpu();
    let x = Tensor::from_vec(&dev, &ramp(24, 0.35), [2, 3, 4]).unwrap();
    let w = Tensor::from_vec(&dev, &ramp(24, 0.13).iter().map(|v| v + 0.05).collect::<Vec<_>>(), [2, 3, 4]).unwrap();
    let mut checked = 0;
    for (op, bytes) in models {
        let layer = OnnxLayer::new(Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap(), None, None).unwrap();
        let loss = |l: &OnnxLayer| l.forward(&x, Mode::Train).unwrap().mul(&w).unwrap().sum_all().unwrap();
        loss(&layer).backward().unwrap();
        let params = layer.session().params();
        assert!(!params.is_empty(), "{op}: no weights");
        for (name, p) in params {
            let grad = p.grad().unwrap_or_else(|| panic!("{op}: no gradient for {name}")).to_vec().unwrap();
            let base = p.tensor().to_vec().unwrap();
            let dims = p.tensor().dims().to_vec();
            for i in [0, base.len() - 1] {
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
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} gradients checked");
}
