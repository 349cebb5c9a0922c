//! onnxruntime's attention operators (`MultiHeadAttention`, `GroupQueryAttention`,
//! `Attention`, `com.microsoft`): their per-operator fixtures (tag `attention`) on every native
//! backend against onnxruntime 1.20.1's CPU kernels; the input forms that kernel refuses or
//! gets wrong (packed QKV / KV, a past without a present, no bias) against the equivalent
//! forms it does run; bad shapes and unsupported attributes as node errors; and autodiff's
//! gradients through the attention equal to finite differences.

mod common;
mod graphs;

use graphs::*;
use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::{Mode, Module};
use pixelgrad_onnx::proto::{NodeProto, TensorProto};
use pixelgrad_onnx::{HostTensor, Input, Model, OnnxError, OnnxLayer, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn ms(mut n: NodeProto) -> NodeProto {
    n.domain = "com.microsoft".into();
    n
}

fn ramp(n: usize, scale: f32, phase: usize) -> Vec<f32> {
    (0..n).map(|i| (((i + phase) * 7 % 11) as f32 - 5.0) * scale).collect()
}

fn attention_cases() -> Vec<common::Case> {
    let cases: Vec<_> = common::cases("ops").into_iter().filter(|c| c.tags.iter().any(|t| t == "attention")).collect();
    assert!(cases.len() >= 53, "{} attention cases", cases.len());
    cases
}

#[test]
fn attention_cases_match_onnxruntime_on_cpu() {
    common::check_cases(&cpu(), "ops", &attention_cases(), 2);
}

#[test]
fn attention_cases_match_onnxruntime_on_wgpu() {
    let dev = Device::new(pixelgrad_wgpu::WgpuBackend::new(pixelgrad_wgpu::WgpuOptions::default()).expect("a WebGPU adapter (lavapipe)"));
    common::check_cases(&dev, "ops", &attention_cases(), 1);
}

#[test]
fn attention_cases_match_onnxruntime_on_webgl2_and_webgl1() {
    for webgl1 in [false, true] {
        let opts = pixelgrad_webgl::WebGlOptions { self_test: false, webgl1, ..Default::default() };
        let dev = Device::new(pixelgrad_webgl::WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context"));
        common::check_cases(&dev, "ops", &attention_cases(), 1);
    }
}

/// Runs `bytes` on the CPU with float inputs `feeds` (name, dims, values); every output.
fn run(bytes: &[u8], feeds: &[(&str, Vec<usize>, Vec<f32>)]) -> Result<Vec<Vec<f32>>, OnnxError> {
    let s = Session::new(Model::from_bytes(bytes)?, &cpu())?;
    run_on(&s, feeds)
}

fn run_on(s: &Session, feeds: &[(&str, Vec<usize>, Vec<f32>)]) -> Result<Vec<Vec<f32>>, OnnxError> {
    let f: Vec<(&str, Input)> = feeds.iter().map(|(n, d, v)| (*n, Input::Host(HostTensor::f32(d.clone(), v.clone())))).collect();
    s.run(&f)?.into_iter().map(|(_, v)| Ok(v.to_host()?.to_f32())).collect()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let d = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    assert!(d < 1e-5, "{what}: differ by {d}");
}

fn dims(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

/// `[B, S, N, H]` (last axis fastest) rearranged to `[B, S, N, parts, H]` with `x` as part
/// `which`: the packed layouts of MultiHeadAttention.
fn pack(parts: &[&[f32]], (b, s, n, h): (usize, usize, usize, usize)) -> Vec<f32> {
    let mut out = Vec::with_capacity(parts.len() * b * s * n * h);
    for row in 0..b * s * n {
        for p in parts {
            out.extend_from_slice(&p[row * h..(row + 1) * h]);
        }
    }
    out
}

/// Packed QKV (`query` `[B, S, N, 3, H]`) and packed KV (`key` `[B, L, N, 2, H]`), which
/// onnxruntime's CPU kernel does not run, give what the separate Q, K, V give (with a bias,
/// causal); `MultiHeadAttention` with a past but no present output attends to the past too
/// (onnxruntime's CPU kernel then drops it); `Attention` without a bias is `Attention` with a
/// zero one (onnxruntime's CPU kernel crashes on it).
#[test]
fn forms_onnxruntime_does_not_run_equal_their_equivalents() {
    let (b, s, n, h) = (2, 3, 2, 4);
    let d = n * h;
    let (q, k, v) = (ramp(b * s * d, 0.1, 0), ramp(b * s * d, 0.13, 3), ramp(b * s * d, 0.07, 5));
    let bias = f32s("bias", &[3 * d as i64], &ramp(3 * d, 0.05, 1));
    let mha =
        |ins: &[&str], outs: &[&str]| ms(node("MultiHeadAttention", ins, outs, vec![int("num_heads", n as i64), int("unidirectional", 1)]));
    let bsd = [b as i64, s as i64, d as i64];
    let separate =
        model(17, vec![mha(&["q", "k", "v", "bias"], &["y"])], &[("q", &bsd), ("k", &bsd), ("v", &bsd)], &["y"], vec![bias.clone()]);
    let want =
        run(&separate, &[("q", vec![b, s, d], q.clone()), ("k", vec![b, s, d], k.clone()), ("v", vec![b, s, d], v.clone())]).unwrap();
    let qkv_dims = [b, s, n, 3, h];
    let packed_qkv = model(17, vec![mha(&["q", "", "", "bias"], &["y"])], &[("q", &dims(&qkv_dims))], &["y"], vec![bias.clone()]);
    let got = run(&packed_qkv, &[("q", qkv_dims.to_vec(), pack(&[&q, &k, &v], (b, s, n, h)))]).unwrap();
    close(&got[0], &want[0], "packed QKV");
    let kv_dims = [b, s, n, 2, h];
    let packed_kv = model(17, vec![mha(&["q", "k", "", "bias"], &["y"])], &[("q", &bsd), ("k", &dims(&kv_dims))], &["y"], vec![bias]);
    let got = run(&packed_kv, &[("q", vec![b, s, d], q.clone()), ("k", kv_dims.to_vec(), pack(&[&k, &v], (b, s, n, h)))]).unwrap();
    close(&got[0], &want[0], "packed KV");

    // a past without a present output: the same output as with one
    let past = [b as i64, n as i64, 2, h as i64];
    let pasts = vec![f32s("pk", &past, &ramp(b * n * 2 * h, 0.09, 2)), f32s("pv", &past, &ramp(b * n * 2 * h, 0.11, 4))];
    let ins = ["q", "k", "v", "", "", "", "pk", "pv"];
    let inputs = [("q", &bsd[..]), ("k", &bsd[..]), ("v", &bsd[..])];
    let with_present = model(17, vec![mha(&ins, &["y", "pk_out", "pv_out"])], &inputs, &["y", "pk_out", "pv_out"], pasts.clone());
    let without = model(17, vec![mha(&ins, &["y"])], &inputs, &["y"], pasts);
    let feeds = [("q", vec![b, s, d], q.clone()), ("k", vec![b, s, d], k), ("v", vec![b, s, d], v)];
    let a = run(&with_present, &feeds).unwrap();
    let c = run(&without, &feeds).unwrap();
    close(&c[0], &a[0], "past without present");
    assert_eq!(a[1].len(), b * n * (2 + s) * h, "present_key holds the past and the new keys");
    // and the past changes the output (it is attended to)
    let no_past = model(17, vec![mha(&["q", "k", "v"], &["y"])], &inputs, &["y"], vec![]);
    let e = run(&no_past, &feeds).unwrap();
    assert!(e[0].iter().zip(&c[0]).any(|(x, y)| (x - y).abs() > 1e-3), "the past was ignored");

    // Attention without a bias = with a zero bias
    let w = f32s("w", &[5, 3 * d as i64], &ramp(5 * 3 * d, 0.1, 6));
    let att = |ins: &[&str]| ms(node("Attention", ins, &["y"], vec![int("num_heads", n as i64)]));
    let no_bias = model(17, vec![att(&["x", "w"])], &[("x", &[b as i64, s as i64, 5])], &["y"], vec![w.clone()]);
    let zero = model(
        17,
        vec![att(&["x", "w", "b"])],
        &[("x", &[b as i64, s as i64, 5])],
        &["y"],
        vec![w, f32s("b", &[3 * d as i64], &vec![0.0; 3 * d])],
    );
    let x = [("x", vec![b, s, 5], ramp(b * s * 5, 0.2, 0))];
    close(&run(&no_bias, &x).unwrap()[0], &run(&zero, &x).unwrap()[0], "Attention without a bias");
}

/// A past of length 0 (what a generation loop feeds before the first token) is no past: the
/// output is the one without past inputs and the present is the new keys and values, for
/// `MultiHeadAttention` and opset 23 `Attention` (`GroupQueryAttention` reads its past through
/// the same check).
#[test]
fn an_empty_past_is_no_past() {
    let (b, s, n, h) = (1, 3, 2, 4);
    let d = n * h;
    let bsd = [b as i64, s as i64, d as i64];
    let past = [b as i64, n as i64, 0, h as i64];
    let (q, k, v) = (ramp(b * s * d, 0.1, 0), ramp(b * s * d, 0.13, 3), ramp(b * s * d, 0.07, 5));
    let empty = |name: &'static str| (name, vec![b, n, 0, h], Vec::new());
    let qkv = |q: &[f32], k: &[f32], v: &[f32]| {
        vec![("q", vec![b, s, d], q.to_vec()), ("k", vec![b, s, d], k.to_vec()), ("v", vec![b, s, d], v.to_vec())]
    };
    let inputs = [("q", &bsd[..]), ("k", &bsd[..]), ("v", &bsd[..])];
    let with_past = [("q", &bsd[..]), ("k", &bsd[..]), ("v", &bsd[..]), ("pk", &past[..]), ("pv", &past[..])];

    // MultiHeadAttention (causal) and opset 23 Attention on [B, S, D] with num_heads
    let mha =
        |ins: &[&str], outs: &[&str]| ms(node("MultiHeadAttention", ins, outs, vec![int("num_heads", n as i64), int("unidirectional", 1)]));
    let att23 = |ins: &[&str], outs: &[&str]| {
        node("Attention", ins, outs, vec![int("q_num_heads", n as i64), int("kv_num_heads", n as i64), int("is_causal", 1)])
    };
    let cases: [(&str, i64, NodeProto, NodeProto); 2] = [
        ("MultiHeadAttention", 17, mha(&["q", "k", "v"], &["y"]), mha(&["q", "k", "v", "", "", "", "pk", "pv"], &["y", "ok", "ov"])),
        ("Attention (opset 23)", 23, att23(&["q", "k", "v"], &["y"]), att23(&["q", "k", "v", "", "pk", "pv"], &["y", "ok", "ov"])),
    ];
    for (what, opset, plain, past_node) in cases {
        let want = run(&model(opset, vec![plain], &inputs, &["y"], vec![]), &qkv(&q, &k, &v)).unwrap();
        let mut feeds = qkv(&q, &k, &v);
        feeds.extend([empty("pk"), empty("pv")]);
        let got = run(&model(opset, vec![past_node], &with_past, &["y", "ok", "ov"], vec![]), &feeds)
            .unwrap_or_else(|e| panic!("{what} with an empty past: {e}"));
        close(&got[0], &want[0], what);
        // the present, [B, N, S, H], is the new keys and values split into heads
        let heads = |x: &[f32]| -> Vec<f32> {
            let mut out = Vec::new();
            for head in 0..n {
                for t in 0..s {
                    out.extend_from_slice(&x[t * d + head * h..t * d + (head + 1) * h]);
                }
            }
            out
        };
        close(&got[1], &heads(&k), &format!("{what}: present_key"));
        close(&got[2], &heads(&v), &format!("{what}: present_value"));
    }
}

/// Every bad shape and unsupported attribute is a node error naming the node and what is
/// wrong (the attribute, by name); the session that refused one runs a good input afterwards.
#[test]
fn bad_shapes_and_unsupported_attributes_are_node_errors() {
    let x = [("x", &[2i64, 3, 8][..])];
    let mha = |ins: &[&str], attrs: Vec<_>, inits: Vec<TensorProto>| {
        model(17, vec![ms(node("MultiHeadAttention", ins, &["y"], attrs))], &x, &["y"], inits)
    };
    let kv = |name: &str, d: &[i64]| f32s(name, d, &ramp(d.iter().product::<i64>() as usize, 0.1, 0));
    let gqa = |attrs: Vec<_>, inits: Vec<TensorProto>| {
        let ins = ["x", "k", "v", "", "", "sk", "t"];
        model(17, vec![ms(node("GroupQueryAttention", &ins, &["y", "pk", "pv"], attrs))], &x, &["y"], inits)
    };
    let gqa_ok = |sk: &[i64], t: i64| vec![kv("k", &[2, 3, 8]), kv("v", &[2, 3, 8]), i64s("sk", &[2], sk), i64s("t", &[], &[t])];
    // do_rotary with caches of `rows` positions and `width` angles (heads of 4 here)
    let gqa_rot = |rows: i64, width: i64| {
        let ins = ["x", "k", "v", "", "", "sk", "t", "c", "s"];
        let mut inits = gqa_ok(&[2, 2], 3);
        inits.extend([kv("c", &[rows, width]), kv("s", &[rows, width])]);
        model(
            17,
            vec![ms(node(
                "GroupQueryAttention",
                &ins,
                &["y", "pk", "pv"],
                vec![int("num_heads", 2), int("kv_num_heads", 2), int("do_rotary", 1)],
            ))],
            &x,
            &["y"],
            inits,
        )
    };
    let att = |ins: &[&str], attrs: Vec<_>, inits: Vec<TensorProto>| {
        model(17, vec![ms(node("Attention", ins, &["y"], attrs))], &x, &["y"], inits)
    };
    let w = kv("w", &[8, 24]);
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("heads divide", mha(&["x", "x", "x"], vec![int("num_heads", 3)], vec![]), "not a multiple of num_heads 3"),
        ("heads positive", mha(&["x", "x", "x"], vec![int("num_heads", 0)], vec![]), "'num_heads' is 0"),
        ("mha key", mha(&["x", "k", "v"], vec![int("num_heads", 2)], vec![kv("k", &[2, 3, 6]), kv("v", &[2, 3, 8])]), "do not fit query"),
        ("mha value", mha(&["x", "x", "v"], vec![int("num_heads", 2)], vec![kv("v", &[2, 4, 8])]), "do not fit query"),
        ("mha no key", mha(&["x"], vec![int("num_heads", 2)], vec![]), "key (input 1) is missing"),
        ("mha bias", mha(&["x", "x", "x", "b"], vec![int("num_heads", 2)], vec![kv("b", &[8])]), "bias (input 3) has shape [8]"),
        (
            "mha mask",
            mha(&["x", "x", "x", "", "m"], vec![int("num_heads", 2)], vec![i64s("m", &[2, 4], &[1; 8])]),
            "key_padding_mask (input 4) has shape [2, 4]",
        ),
        (
            "mha attention bias",
            mha(&["x", "x", "x", "", "", "ab"], vec![int("num_heads", 2)], vec![kv("ab", &[2, 3, 3, 3])]),
            "attention_bias (input 5) has shape [2, 3, 3, 3]",
        ),
        ("mha past alone", mha(&["x", "x", "x", "", "", "", "pk"], vec![int("num_heads", 2)], vec![kv("pk", &[2, 2, 1, 4])]), "together"),
        (
            "mha past shape",
            mha(
                &["x", "x", "x", "", "", "", "pk", "pv"],
                vec![int("num_heads", 2)],
                vec![kv("pk", &[2, 2, 1, 3]), kv("pv", &[2, 2, 1, 4])],
            ),
            "past_key [2, 2, 1, 3]",
        ),
        (
            "mha packed with key",
            model(
                17,
                vec![ms(node("MultiHeadAttention", &["q", "x"], &["y"], vec![int("num_heads", 2)]))],
                &x,
                &["y"],
                vec![kv("q", &[2, 3, 2, 3, 4])],
            ),
            "key and value must then be absent",
        ),
        ("mha unidirectional", mha(&["x", "x", "x"], vec![int("num_heads", 2), int("unidirectional", 2)], vec![]), "'unidirectional' is 2"),
        ("mha unknown attribute", mha(&["x", "x", "x"], vec![int("num_heads", 2), int("do_rotary", 1)], vec![]), "'do_rotary'"),
        (
            "gqa rotary without caches",
            gqa(vec![int("num_heads", 2), int("kv_num_heads", 2), int("do_rotary", 1)], gqa_ok(&[2, 2], 3)),
            "needs cos_cache and sin_cache",
        ),
        ("gqa rotary wider than a head", gqa_rot(8, 3), "between 2 and the head size 4"),
        ("gqa rotary past the caches", gqa_rot(2, 2), "positions up to 2 are outside the caches' 2 positions"),
        (
            "gqa rotary flag",
            gqa(vec![int("num_heads", 2), int("kv_num_heads", 2), int("rotary_interleaved", 2)], gqa_ok(&[2, 2], 3)),
            "'rotary_interleaved' is 2",
        ),
        ("gqa groups", gqa(vec![int("num_heads", 3), int("kv_num_heads", 2)], gqa_ok(&[2, 2], 3)), "num_heads 3 is not a multiple"),
        ("gqa seqlens", gqa(vec![int("num_heads", 2), int("kv_num_heads", 2)], gqa_ok(&[2, 7], 5)), "total_sequence_length 5"),
        (
            "gqa seqlens count",
            gqa(vec![int("num_heads", 2), int("kv_num_heads", 2)], {
                let mut v = gqa_ok(&[2, 2], 3);
                v[2] = i64s("sk", &[3], &[2, 2, 2]);
                v
            }),
            "seqlens_k has 3 values",
        ),
        ("gqa softcap", gqa(vec![int("num_heads", 2), int("kv_num_heads", 2), float("softcap", -1.0)], gqa_ok(&[2, 2], 3)), "softcap -1"),
        ("gqa kv", gqa(vec![int("num_heads", 2), int("kv_num_heads", 1)], gqa_ok(&[2, 2], 3)), "expected [2, 3, 4]"),
        ("attention weights", att(&["x", "w"], vec![int("num_heads", 2)], vec![kv("w", &[7, 24])]), "weights [7, 24]"),
        (
            "attention hidden sizes",
            att(&["x", "w"], vec![int("num_heads", 2), ints("qkv_hidden_sizes", &[8, 6, 10])], vec![w.clone()]),
            "Q and K be equal",
        ),
        (
            "attention 4d mask",
            att(&["x", "w", "", "m"], vec![int("num_heads", 2)], vec![w.clone(), i64s("m", &[2, 1, 3, 3], &[1; 18])]),
            "4-D (Megatron) masks are not supported",
        ),
        (
            "attention mask",
            att(&["x", "w", "", "m"], vec![int("num_heads", 2)], vec![w.clone(), i64s("m", &[3], &[1; 3])]),
            "expected [2] or [4]",
        ),
        (
            "attention past",
            att(&["x", "w", "", "", "p"], vec![int("num_heads", 2)], vec![w.clone(), kv("p", &[2, 2, 2, 1, 3])]),
            "past has shape [2, 2, 2, 1, 3]",
        ),
        (
            "attention past_sequence_length",
            att(&["x", "w", "", "", "", "", "l"], vec![int("num_heads", 2)], vec![w.clone(), i64s("l", &[], &[0])]),
            "past_sequence_length (input 6) is not supported",
        ),
        ("attention rotary", att(&["x", "w"], vec![int("num_heads", 2), int("do_rotary", 1)], vec![w.clone()]), "'do_rotary'"),
        (
            "attention shared buffer",
            att(&["x", "w"], vec![int("num_heads", 2), int("past_present_share_buffer", 1)], vec![w.clone()]),
            "'past_present_share_buffer'",
        ),
    ];
    let onnx23 =
        |ins: &[&str], attrs: Vec<_>, inits: Vec<TensorProto>| model(23, vec![node("Attention", ins, &["y"], attrs)], &x, &["y"], inits);
    let heads23 = || vec![int("q_num_heads", 2), int("kv_num_heads", 2)];
    cases.extend([
        ("opset 23 heads", onnx23(&["x", "x", "x"], vec![], vec![]), "'q_num_heads' is 0"),
        (
            "opset 23 mode",
            onnx23(&["x", "x", "x"], [heads23(), vec![int("qk_matmul_output_mode", 4)]].concat(), vec![]),
            "'qk_matmul_output_mode' is 4",
        ),
        ("opset 23 mask", onnx23(&["x", "x", "x", "m"], heads23(), vec![kv("m", &[2, 3, 4])]), "attn_mask has shape [2, 3, 4]"),
        ("opset 23 ranks", onnx23(&["x", "k", "x"], heads23(), vec![kv("k", &[2, 2, 3, 4])]), "expected all [batch, sequence, hidden]"),
        ("opset 23 softcap", onnx23(&["x", "x", "x"], [heads23(), vec![float("softcap", f32::NAN)]].concat(), vec![]), "softcap NaN"),
    ]);
    let input = || vec![("x", vec![2, 3, 8], ramp(48, 0.1, 0))];
    for (what, bytes, want) in cases {
        let s = Session::new(Model::from_bytes(&bytes).unwrap_or_else(|e| panic!("{what}: {e}")), &cpu()).unwrap();
        let e = run_on(&s, &input()).map(|_| ()).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, OnnxError::Node { .. }), "{what}: {msg}");
        assert!(msg.contains(want), "{what}: {msg}");
        assert!(msg.contains(&format!("'{}'", s.model().nodes[0].name)), "{what}: the message names the node: {msg}");
    }
    // the process stays usable: a good MultiHeadAttention after the refused ones; attending
    // to one key (the first) gives its value
    let good = model(
        17,
        vec![ms(node("MultiHeadAttention", &["x", "x", "x"], &["y"], vec![int("num_heads", 2), int("unidirectional", 1)]))],
        &x,
        &["y"],
        vec![],
    );
    let y = run(&good, &input()).unwrap();
    close(&y[0][..8], &ramp(48, 0.1, 0)[..8], "the first query attends to the first key only");
}

/// The gradient autodiff gives `Attention`'s projection weights and bias, and the keys and
/// values a `MultiHeadAttention` reads from weights (cross attention over a learned memory),
/// equals the central finite difference of the loss `Σ y · w`.
#[test]
fn weight_gradients_equal_finite_differences() {
    let x3 = [("x", &[2i64, 3, 8][..])];
    let models: Vec<(&str, Vec<u8>)> = vec![
        (
            "Attention",
            model(
                17,
                vec![ms(node("Attention", &["x", "w", "b", "m"], &["y"], vec![int("num_heads", 2), int("unidirectional", 1)]))],
                &x3,
                &["y"],
                vec![
                    f32s("w", &[8, 24], &ramp(192, 0.05, 1)),
                    f32s("b", &[24], &ramp(24, 0.03, 2)),
                    i64s("m", &[2, 3], &[1, 1, 0, 1, 1, 1]),
                ],
            ),
        ),
        (
            "MultiHeadAttention",
            model(
                17,
                vec![ms(node("MultiHeadAttention", &["x", "k", "v"], &["y"], vec![int("num_heads", 2)]))],
                &x3,
                &["y"],
                vec![f32s("k", &[2, 4, 8], &ramp(64, 0.09, 3)), f32s("v", &[2, 4, 8], &ramp(64, 0.07, 4))],
            ),
        ),
    ];
    let dev = cpu();
    let x = Tensor::from_vec(&dev, &ramp(48, 0.11, 0), [2, 3, 8]).unwrap();
    let wl = Tensor::from_vec(&dev, &ramp(48, 0.13, 5).iter().map(|v| v + 0.05).collect::<Vec<_>>(), [2, 3, 8]).unwrap();
    let mut checked = 0;
    for (op, bytes) in models {
        let layer = OnnxLayer::new(Session::new(Model::from_bytes(&bytes).unwrap(), &dev).unwrap(), None, None).unwrap();
        let loss = |l: &OnnxLayer| l.forward(&x, Mode::Train).unwrap().mul(&wl).unwrap().sum_all().unwrap();
        loss(&layer).backward().unwrap();
        let params = layer.session().params();
        assert!(params.len() >= 2, "{op}: {} weights", params.len());
        for (name, p) in params {
            let grad = p.grad().unwrap_or_else(|| panic!("{op}: no gradient for {name}")).to_vec().unwrap();
            let base = p.tensor().to_vec().unwrap();
            let dims = p.tensor().dims().to_vec();
            for i in [0, base.len() / 2 + 1, base.len() - 1] {
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
    assert!(checked >= 12, "{checked} gradients checked");
}
