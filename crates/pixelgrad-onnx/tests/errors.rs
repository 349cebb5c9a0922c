//! Bad input gives a typed error naming what is wrong, never a panic: truncated and foreign
//! files, unsupported operators (op type, node name, opset), unknown attributes, inputs of the
//! wrong name, dtype or shape (name and expected shape), unknown outputs.

mod common;

use pixelgrad_core::{Device, Tensor};
use pixelgrad_onnx::{DType, HostTensor, Input, Model, OnnxError, Session};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn bad(name: &str) -> std::path::PathBuf {
    common::fixtures().join("bad").join(name)
}

#[test]
fn files_that_are_not_onnx_models() {
    assert!(matches!(Model::from_bytes(b""), Err(OnnxError::Parse(m)) if m.contains("empty")));
    assert!(matches!(Model::from_bytes(b"\x89PNG\r\n\x1a\n not a model"), Err(OnnxError::Parse(_))));
    let good = std::fs::read(common::fixtures().join("models/ppocr_cls/model.onnx")).unwrap();
    for cut in [10, good.len() / 3, good.len() - 7] {
        match Model::from_bytes(&good[..cut]) {
            Err(OnnxError::Parse(_)) => {}
            other => panic!("truncated at {cut}: expected a parse error, got {:?}", other.map(|_| ())),
        }
    }
    let e = Model::load("/nonexistent/model.onnx").unwrap_err();
    assert!(matches!(&e, OnnxError::Io { path, .. } if path.contains("/nonexistent/model.onnx")), "{e}");
}

#[test]
fn unsupported_operators_are_named_with_node_and_opset() {
    let e = Model::load(bad("unsupported_op.onnx")).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, OnnxError::UnsupportedOp { .. }), "{msg}");
    assert!(msg.contains("Det") && msg.contains("my_det") && msg.contains("opset 13"), "{msg}");
    let msg = Model::load(bad("custom_domain.onnx")).unwrap_err().to_string();
    assert!(msg.contains("custom_relu") && msg.contains("com.example"), "{msg}");
}

#[test]
fn unknown_attributes_are_refused_by_name() {
    let s = Session::new(Model::load(bad("unknown_attribute.onnx")).unwrap(), &cpu()).unwrap();
    let x = Tensor::ones(s.device(), [1, 1, 4, 4]).unwrap();
    let msg = s.run(&[("x4", x.into())]).unwrap_err().to_string();
    assert!(msg.contains("'foo'") && msg.contains("conv3d_like"), "{msg}");
}

#[test]
fn inputs_of_the_wrong_name_dtype_or_shape() {
    let dev = cpu();
    let s = Session::new(Model::load(bad("relu_2x3.onnx")).unwrap(), &dev).unwrap();
    let ok = Tensor::ones(&dev, [2, 3]).unwrap();
    assert_eq!(s.run(&[("x", ok.clone().into())]).unwrap()[0].1.dims(), &[2, 3]);

    let msg = s.run(&[("input", ok.clone().into())]).unwrap_err().to_string();
    assert!(msg.contains("'input'") && msg.contains("'x' float [2, 3]"), "{msg}");

    let msg = s.run(&[]).unwrap_err().to_string();
    assert!(msg.contains("'x'") && msg.contains("missing") && msg.contains("[2, 3]"), "{msg}");

    let wrong_shape = Tensor::ones(&dev, [3, 2]).unwrap();
    let msg = s.run(&[("x", wrong_shape.into())]).unwrap_err().to_string();
    assert!(msg.contains("[3, 2]") && msg.contains("expects [2, 3]"), "{msg}");

    let ints = HostTensor::i64(vec![2, 3], vec![1; 6]);
    let e = s.run(&[("x", Input::Host(ints))]).unwrap_err();
    assert!(matches!(&e, OnnxError::Input { name, msg } if name == "x" && msg.contains("int64") && msg.contains("float")), "{e}");

    let half = HostTensor { dtype: DType::F16, shape: vec![2, 3], data: pixelgrad_onnx::Data::F32(vec![0.5; 6]) };
    assert!(s.run(&[("x", Input::Host(half))]).unwrap_err().to_string().contains("float16"));

    let other = Device::new(pixelgrad_cpu::CpuBackend::new());
    let foreign = Tensor::ones(&other, [2, 3]).unwrap();
    assert!(s.run(&[("x", foreign.into())]).unwrap_err().to_string().contains("lives on"));

    let msg = s.run_to(&[("x", ok.into())], &["nope"]).unwrap_err().to_string();
    assert!(msg.contains("'nope'"), "{msg}");
}

/// Corrupted files (bytes flipped, cut, spliced at seeded positions) load with an error or load
/// and run, but never panic.
#[test]
fn corrupted_models_never_panic() {
    let good = std::fs::read(common::fixtures().join("models/ppocr_cls/model.onnx")).unwrap();
    let dev = cpu();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut loaded, mut refused) = (0, 0);
    for round in 0..300 {
        let mut b = good.clone();
        match round % 3 {
            0 => {
                for _ in 0..1 + next() % 8 {
                    let i = (next() as usize) % b.len();
                    b[i] ^= (next() % 255 + 1) as u8;
                }
            }
            1 => b.truncate((next() as usize) % b.len()),
            _ => {
                let (i, j) = ((next() as usize) % b.len(), (next() as usize) % b.len());
                let chunk: Vec<u8> = b[i.min(j)..i.max(j)].iter().take(64).copied().collect();
                let at = (next() as usize) % b.len();
                b.splice(at..at, chunk);
            }
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match Model::from_bytes(&b) {
            Ok(m) => {
                if let Ok(s) = Session::new(m, &dev) {
                    let x = Tensor::zeros(&dev, [1, 3, 48, 64]).unwrap();
                    let _ = s.run(&[("x", x.into())]);
                }
                true
            }
            Err(_) => false,
        }));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("round {round}: a corrupted model made pixelgrad panic"),
        }
    }
    println!("corrupted models: {loaded} loaded (and ran or failed cleanly), {refused} refused");
    assert!(refused > 50, "most corruptions should be refused");
}
