//! `pixelgrad run` on hostile ONNX files: the four 17-30 byte models of issue 38 (one node
//! with only an operator type: `Slice`, `ReduceSum`, `BatchNormalization` without inputs,
//! `QuantizeLinear` without outputs) panicked in the loader (exit 101); each is now one
//! `error: ...` line naming the node and what its schema wants, and exit status 1. So is a
//! size bomb (a 16 GiB broadcast or matrix product from a ~200 byte model).

use std::path::{Path, PathBuf};
use std::process::Command;

use pixelgrad::onnx::proto::{
    encode_model, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    TypeProtoTensor, ValueInfoProto,
};

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("pixelgrad-hostile-{}-{name}.onnx", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `pixelgrad run FILE` (CPU) and checks: exit 1, no panic, exactly one `error:` line,
/// the last one, containing every needle.
fn refused(path: &Path, needles: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).args(["run", path.to_str().unwrap(), "--backend", "cpu"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}: {err}", path.display());
    assert!(!err.contains("panicked"), "panic: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.starts_with("error: ") && needles.iter().all(|n| last.contains(n)), "expected {needles:?} in: {err}");
}

fn bare(op: &str) -> Vec<u8> {
    encode_model(&ModelProto {
        ir_version: 3,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 13 }],
        graph: Some(GraphProto { node: vec![NodeProto { op_type: op.into(), ..Default::default() }], ..Default::default() }),
        ..Default::default()
    })
}

#[test]
fn issue38_models_are_one_error_line() {
    for op in ["Slice", "ReduceSum", "BatchNormalization", "QuantizeLinear"] {
        let bytes = bare(op);
        assert!((17..=32).contains(&bytes.len()), "{op}: {} bytes", bytes.len());
        let path = write(op, &bytes);
        refused(&path, &[op, "has 0 inputs"]);
        std::fs::remove_file(&path).ok();
    }
}

#[test]
fn broadcast_and_matmul_bombs_are_one_error_line() {
    for op in ["Add", "MatMul"] {
        let bytes = bomb(op);
        assert!(bytes.len() < 256, "{op}: {} bytes", bytes.len());
        let path = write(&format!("bomb-{op}"), &bytes);
        refused(&path, &["4294967296", "raise it with"]);
        std::fs::remove_file(&path).ok();
    }
}

/// `[65536, 1] op [1, 65536]` from two folded `ConstantOfShape` nodes: 2^32 elements (16 GiB
/// of f32) asked for by a model of under 256 bytes.
fn bomb(op: &str) -> Vec<u8> {
    outer(op, 65536)
}

/// `[n, 1] op [1, n]`: n^2 elements.
fn outer(op: &str, n: i64) -> Vec<u8> {
    let shape = |name: &str, v: [i64; 2]| TensorProto {
        name: name.into(),
        dims: vec![2],
        data_type: 7,
        int64_data: v.to_vec(),
        ..Default::default()
    };
    let node = |op: &str, ins: &[&str], out: &str| NodeProto {
        op_type: op.into(),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: vec![out.into()],
        ..Default::default()
    };
    let x = ValueInfoProto {
        name: "y".into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: 1,
                shape: Some(TensorShapeProto { dim: vec![Dimension { value: Some(DimValue::DimValue(1)), ..Default::default() }] }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    encode_model(&ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 13 }],
        graph: Some(GraphProto {
            node: vec![node("ConstantOfShape", &["cs"], "col"), node("ConstantOfShape", &["rs"], "row"), node(op, &["col", "row"], "y")],
            initializer: vec![shape("cs", [n, 1]), shape("rs", [1, n])],
            output: vec![x],
            ..Default::default()
        }),
        ..Default::default()
    })
}

#[test]
fn the_cli_limit_flags_lower_and_name_the_limits() {
    // x [8, 1] + c [1, 8], x an input (nothing folds at load): 64 elements on the device
    let c = TensorProto { name: "c".into(), dims: vec![1, 8], data_type: 1, float_data: vec![1.0; 8], ..Default::default() };
    let info = |name: &str, dims: [i64; 2]| ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: 1,
                shape: Some(TensorShapeProto {
                    dim: dims.iter().map(|&d| Dimension { value: Some(DimValue::DimValue(d)), ..Default::default() }).collect(),
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let model = encode_model(&ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 13 }],
        graph: Some(GraphProto {
            node: vec![NodeProto {
                op_type: "Add".into(),
                input: vec!["x".into(), "c".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            initializer: vec![c],
            input: vec![info("x", [8, 1])],
            output: vec![info("y", [8, 8])],
            ..Default::default()
        }),
        ..Default::default()
    });
    let path = write("outer-8", &model);
    // x as .npy: version 1.0, a header padded to 64 bytes, eight f32 values
    let mut header = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 1), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend_from_slice(&(header.len() as u16).to_le_bytes());
    npy.extend_from_slice(header.as_bytes());
    (0..8).for_each(|i| npy.extend_from_slice(&(i as f32).to_le_bytes()));
    let x = std::env::temp_dir().join(format!("pixelgrad-limit-flags-{}-x.npy", std::process::id()));
    std::fs::write(&x, &npy).unwrap();
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-limit-flags-{}", std::process::id()));
    let input = format!("x={}", x.display());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", path.to_str().unwrap(), "--backend", "cpu", "--input", &input, "--out", out_dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).args(&args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    for (flag, value) in [("--max-elements", "63"), ("--max-work", "10")] {
        let (code, err) = run(&[flag, value]);
        assert_eq!(code, Some(1), "{flag} {value}: {err}");
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(last.starts_with("error: ") && last.contains("over the limit of") && last.contains(flag), "{flag}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert_eq!(run(&["--max-elements", "64"]).0, Some(0));
    let (code, err) = run(&["--max-elements", "0"]);
    assert_eq!(code, Some(1), "{err}");
    std::fs::remove_file(&path).ok();
    std::fs::remove_file(&x).ok();
    std::fs::remove_dir_all(&out_dir).ok();
}
