//! `pixelgrad generate MODEL.onnx --prompt-ids ...`: token ids from a decoder, the `--json`
//! summary, and one-line errors (exit 1) for a model that is not a decoder and bad ids.

use std::path::PathBuf;
use std::process::Command;

use pixelgrad::onnx::proto::{
    data_type as dt, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    TypeProtoTensor, ValueInfoProto,
};

const VOCAB: usize = 10;

fn vinfo(name: &str, elem_type: i32, dims: &[Result<i64, &str>]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                Ok(n) => DimValue::DimValue(*n),
                Err(p) => DimValue::DimParam(p.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    let t = TypeProtoTensor { elem_type, shape: Some(TensorShapeProto { dim }) };
    ValueInfoProto { name: name.into(), r#type: Some(TypeProto { tensor_type: Some(t), ..Default::default() }), ..Default::default() }
}

/// A decoder without a cache whose logits at token `t` are one-hot at `t + 1` (mod VOCAB):
/// greedy generation counts up.
fn counting_decoder(dir: &std::path::Path) -> PathBuf {
    let table: Vec<f32> = (0..VOCAB * VOCAB).map(|i| if (i / VOCAB + 1) % VOCAB == i % VOCAB { 1.0 } else { 0.0 }).collect();
    let w = TensorProto {
        name: "next".into(),
        dims: vec![VOCAB as i64, VOCAB as i64],
        data_type: dt::FLOAT,
        float_data: table,
        ..Default::default()
    };
    let gather = NodeProto {
        input: vec!["next".into(), "input_ids".into()],
        output: vec!["logits".into()],
        op_type: "Gather".into(),
        name: "lookup".into(),
        ..Default::default()
    };
    let g = GraphProto {
        node: vec![gather],
        name: "counting".into(),
        initializer: vec![w],
        input: vec![vinfo("input_ids", dt::INT64, &[Err("batch"), Err("sequence")])],
        output: vec![vinfo("logits", dt::FLOAT, &[Err("batch"), Err("sequence"), Ok(VOCAB as i64)])],
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
        graph: Some(g),
        ..Default::default()
    };
    let path = dir.join("counting.onnx");
    std::fs::write(&path, pixelgrad::onnx::proto::encode_model(&m)).unwrap();
    path
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-generate-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
}

#[test]
fn generates_counts_up_and_stops() {
    let d = tmp("ok");
    let m = counting_decoder(&d);
    let run = |extra: &[&str]| -> serde_json::Value {
        let out = bin().arg("generate").arg(&m).args(["--prompt-ids", "1,2,3", "--backend", "cpu", "--json"]).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap()
    };
    let j = run(&["--max-tokens", "9"]);
    assert_eq!(j["tokens"], serde_json::json!([4, 5, 6, 7, 8, 9, 0, 1, 2]), "{j}");
    assert_eq!((j["cached"].as_bool(), j["steps"].as_u64()), (Some(false), Some(9)), "{j}");
    assert!(j["tokensPerSecond"].as_f64().unwrap() > 0.0, "{j}");
    let j = run(&["--max-tokens", "9", "--stop", "7"]);
    assert_eq!((j["tokens"].clone(), j["stopped"].as_str()), (serde_json::json!([4, 5, 6]), Some("stop token 7")), "{j}");
    // the text form streams the tokens on stdout
    let out = bin().arg("generate").arg(&m).args(["--prompt-ids", "8", "--max-tokens", "3", "--backend", "cpu"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "9 0 1");
    std::fs::remove_dir_all(&d).ok();
}

fn fails_with(args: &[&str], needle: &str) {
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.starts_with("error: ") && last.contains(needle), "{args:?}: expected '{needle}', got: {err}");
}

#[test]
fn bad_models_and_ids_are_one_line_errors() {
    let d = tmp("bad");
    let m = counting_decoder(&d);
    let m = m.to_str().unwrap();
    fails_with(&["generate", m, "--prompt-ids", "1,x", "--backend", "cpu"], "'x' is not a token id");
    fails_with(&["generate", m, "--prompt-ids", "12", "--backend", "cpu"], "token 12 is outside the vocabulary of 10");
    fails_with(&["generate", m, "--prompt-ids", "", "--backend", "cpu"], "the prompt is empty");
    // a model with no input_ids
    let relu = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
        graph: Some(GraphProto {
            node: vec![NodeProto { input: vec!["x".into()], output: vec!["y".into()], op_type: "Relu".into(), ..Default::default() }],
            name: "g".into(),
            input: vec![vinfo("x", dt::FLOAT, &[Ok(1), Ok(4)])],
            output: vec![vinfo("y", dt::FLOAT, &[Ok(1), Ok(4)])],
            ..Default::default()
        }),
        ..Default::default()
    };
    let p = d.join("relu.onnx");
    std::fs::write(&p, pixelgrad::onnx::proto::encode_model(&relu)).unwrap();
    fails_with(&["generate", p.to_str().unwrap(), "--prompt-ids", "1", "--backend", "cpu"], "no input 'input_ids'");
    std::fs::remove_dir_all(&d).ok();
}
