//! `pixelgrad run MODEL.onnx --input NAME=FILE.npy`: outputs as .npy plus outputs.json, the
//! `--json` summary, and one-line errors (exit 1) for bad models, inputs and arguments.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

fn fixtures() -> PathBuf {
    let root = repo_root();
    let ok = Command::new("bash").arg(root.join("scripts/onnx-fixtures.sh")).current_dir(&root).status().unwrap().success();
    assert!(ok, "scripts/onnx-fixtures.sh failed");
    root.join("target/onnx-fixtures")
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
}

fn fails_with(args: &[&str], needle: &str) {
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "panic for {args:?}: {err}");
    let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(last.starts_with("error: ") && last.contains(needle), "{args:?}: expected an error line with '{needle}', got: {err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error")).count(), 1, "{err}");
}

/// A model quantised by onnxruntime (QOperator) reports its precision, its path and its weight
/// bytes, int8 weights counting one byte each in the file (≤ 0.3× the float model's).
#[test]
fn quantized_model_reports_precision_path_and_weight_bytes() {
    let f = fixtures().join("models");
    let run = |dir: &str, acts: &str| -> (serde_json::Value, Vec<u8>) {
        let out_dir = std::env::temp_dir().join(format!("pixelgrad-onnx-run-q-{dir}-{acts}-{}", std::process::id()));
        let input = format!("x={}", f.join(dir).join("input_0.npy").display());
        let out = bin()
            .args(["run", f.join(dir).join("model.onnx").to_str().unwrap(), "--input", &input, "--backend", "cpu", "--json"])
            .args(["--int8-activations", acts, "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let y = std::fs::read(out_dir.join("output_0.npy")).unwrap();
        std::fs::remove_dir_all(&out_dir).ok();
        (serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap(), y)
    };
    let json = |dir: &str| run(dir, "8bit").0;
    let q = json("ppocr_cls_qop_u8_per_channel");
    // Quantised activations held between nodes are 8-bit tensors; `--int8-activations f32`
    // keeps them in f32 with the same output, byte for byte.
    assert_eq!(q["activation_storage"], "8-bit", "{q}");
    let (q32, y32) = run("ppocr_cls_qop_u8_per_channel", "f32");
    assert_eq!(q32["activation_storage"], "f32", "{q32}");
    assert_eq!(run("ppocr_cls_qop_u8_per_channel", "8bit").1, y32);
    assert!(q["activation_bytes"].as_u64().unwrap() <= q32["activation_bytes"].as_u64().unwrap(), "{q} vs {q32}");
    let qdq = json("ppocr_cls_qdq_u8");
    let fp = json("ppocr_cls");
    assert_eq!(q["precision"], "mixed", "{q}");
    assert!(q["precision_groups"]["int8"]["QLinearConv"].as_u64().unwrap() > 10, "{q}");
    // the CPU backend stores the weights of QLinearConv in 8 bits and accumulates in int32
    assert!(q["path"].as_str().unwrap().starts_with("i8 weights"), "{q}");
    assert_eq!(fp["precision"], "f32", "{fp}");
    assert_eq!(fp["path"], "f32", "{fp}");
    let bytes = |j: &serde_json::Value, k: &str| j[k].as_f64().unwrap();
    // Measured: in the file and on the device the QDQ model's weights take 0.31x the float
    // model's (the int32 biases and float batch norms the quantiser leaves stay 4 bytes), the
    // QOperator form 0.35x.
    assert!(bytes(&qdq, "weight_bytes") <= 0.32 * bytes(&fp, "weight_bytes"), "{qdq} vs {fp}");
    assert!(bytes(&q, "weight_bytes") <= 0.36 * bytes(&fp, "weight_bytes"), "{q} vs {fp}");
    assert!(bytes(&qdq, "device_weight_bytes") <= 0.32 * bytes(&fp, "device_weight_bytes"), "{qdq} vs {fp}");
    // Through onnxruntime's recommended flow (quant_pre_process folds the batch norms into the
    // convolutions, then per-channel QDQ) the weights take 0.297x on the device.
    let pre = json("ppocr_cls_pre_qdq_u8_per_channel");
    assert!(bytes(&pre, "device_weight_bytes") <= 0.3 * bytes(&fp, "device_weight_bytes"), "{pre} vs {fp}");
    assert_eq!(fp["weight_storage"], "f32", "{fp}");
}

/// `--precision f16` halves the weight bytes on the device and stays within 1e-2 of
/// onnxruntime's f32 outputs.
#[test]
fn precision_f16_halves_device_weight_bytes() {
    let f = fixtures().join("models/ppocr_cls");
    let run = |precision: &str| -> (serde_json::Value, Vec<f32>) {
        let out_dir = std::env::temp_dir().join(format!("pixelgrad-onnx-run-{precision}-{}", std::process::id()));
        let input = format!("x={}", f.join("input_0.npy").display());
        let out = bin()
            .args([
                "run",
                f.join("model.onnx").to_str().unwrap(),
                "--input",
                &input,
                "--backend",
                "cpu",
                "--json",
                "--precision",
                precision,
            ])
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let y = pixelgrad::onnx::npy::load(&out_dir.join("output_0.npy")).unwrap().to_f32();
        std::fs::remove_dir_all(&out_dir).ok();
        (serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap(), y)
    };
    let ((h, yh), (full, _)) = (run("f16"), run("f32"));
    assert_eq!(h["weight_storage"], "f16", "{h}");
    assert_eq!(full["weight_storage"], "f32", "{full}");
    let ratio = h["device_weight_bytes"].as_f64().unwrap() / full["device_weight_bytes"].as_f64().unwrap();
    assert!((0.45..0.55).contains(&ratio), "f16 / f32 device weight bytes {ratio}");
    let want = pixelgrad::onnx::npy::load(&f.join("expected_0.npy")).unwrap().to_f32();
    let err = yh.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(err < 1e-2, "f16 weights: max abs error {err}");
    let bad = bin().args(["run", f.join("model.onnx").to_str().unwrap(), "--precision", "f8"]).output().unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("'f8'") && err.contains("f16"), "{err}");
}

#[test]
fn run_writes_outputs_that_match_onnxruntime() {
    let f = fixtures().join("models/ppocr_cls");
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-onnx-run-{}", std::process::id()));
    let input = format!("x={}", f.join("input_0.npy").display());
    let out = bin()
        .args(["run", f.join("model.onnx").to_str().unwrap(), "--input", &input, "--backend", "cpu", "--repeat", "2", "--json", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let j: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(j["backend"], "cpu");
    for k in ["load_ms", "first_run_ms", "run_ms"] {
        assert!(j[k].as_f64().unwrap() > 0.0, "{k}: {j}");
    }
    assert!(j["weight_bytes"].as_u64().unwrap() > 100_000, "{j}");
    // 53 convolutions at least one kernel each, fused or not
    assert!(j["launches_per_run"].as_u64().unwrap() >= 53, "{j}");
    let outs = j["outputs"].as_array().unwrap();
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0]["name"], "save_infer_model/scale_0.tmp_1");
    assert_eq!(outs[0]["shape"], serde_json::json!([8, 2]));
    let index: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("outputs.json")).unwrap()).unwrap();
    assert_eq!(index["outputs"], j["outputs"]);
    let got = pixelgrad::onnx::npy::load(&out_dir.join("output_0.npy")).unwrap().to_f32();
    let want = pixelgrad::onnx::npy::load(&f.join("expected_0.npy")).unwrap().to_f32();
    let err = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(err < 1e-4, "max abs error {err} against onnxruntime");
    std::fs::remove_dir_all(&out_dir).ok();
}

#[test]
fn run_reports_bad_input_in_one_line() {
    let fx = fixtures();
    let cls = fx.join("models/ppocr_cls/model.onnx");
    let cls = cls.to_str().unwrap();
    let x = format!("x={}", fx.join("models/ppocr_cls/input_0.npy").display());
    let labels = format!("x={}", fx.join("models/ppocr_cls/labels.npy").display());
    let relu = fx.join("bad/relu_2x3.onnx");
    let wrong_shape = format!("x={}", fx.join("ops/unary_relu/input_0.npy").display());
    fails_with(&["run", cls, "--input", &x.replace("x=", "image="), "--backend", "cpu"], "input 'image': the model has no such input");
    fails_with(&["run", cls, "--input", &labels, "--backend", "cpu"], "int64");
    fails_with(&["run", relu.to_str().unwrap(), "--input", &wrong_shape, "--backend", "cpu"], "expects [2, 3]");
    fails_with(&["run", cls, "--backend", "cpu"], "missing");
    fails_with(&["run", cls, "--input", "x", "--backend", "cpu"], "NAME=FILE");
    fails_with(&["run", cls, "--input", "x=/nonexistent.npy"], "/nonexistent.npy");
    fails_with(&["run", fx.join("bad/unsupported_op.onnx").to_str().unwrap(), "--input", &x], "Det");
    fails_with(&["run", "/nonexistent.onnx", "--input", &x], "/nonexistent.onnx");
    let junk = std::env::temp_dir().join(format!("pixelgrad-junk-{}.onnx", std::process::id()));
    std::fs::write(&junk, b"definitely not protobuf \xff\xff\xff").unwrap();
    fails_with(&["run", junk.to_str().unwrap(), "--input", &x], "not a valid ONNX model");
    std::fs::remove_file(&junk).ok();
    fails_with(&["run", cls, "--input", &x, "--repeat", "0"], "--repeat");
}

#[test]
fn export_then_run_gives_the_same_predictions() {
    let fx = fixtures();
    let d = std::env::temp_dir().join(format!("pixelgrad-export-cli-{}", std::process::id()));
    let out = bin().args(["train", "--backend", "cpu", "--model", "cnn", "--epochs", "1", "--out"]).arg(&d).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let onnx = d.join("model.onnx");
    let ex = bin().args(["export", "--json", "--model-file"]).arg(d.join("model.safetensors")).arg("--onnx").arg(&onnx).output().unwrap();
    assert!(ex.status.success(), "{}", String::from_utf8_lossy(&ex.stderr));
    // a batch of 3 digits-shaped images through the exported model: pixelgrad and onnxruntime
    let x: Vec<f32> = (0..3 * 64).map(|i| ((i * 37) % 17) as f32 / 16.0).collect();
    let xin = d.join("x.npy");
    std::fs::write(&xin, pixelgrad::onnx::npy::write(&pixelgrad::onnx::HostTensor::f32(vec![3, 1, 8, 8], x)).unwrap()).unwrap();
    let run_dir = d.join("run");
    let r = bin()
        .args(["run", onnx.to_str().unwrap(), "--backend", "cpu", "--input", &format!("input={}", xin.display()), "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let ort_dir = d.join("ort");
    let root = repo_root();
    let o = Command::new(root.join("target/onnx-venv/bin/python"))
        .arg(root.join("scripts/ort_run.py"))
        .arg(&onnx)
        .arg(&ort_dir)
        .arg(format!("input={}", xin.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "onnxruntime: {}", String::from_utf8_lossy(&o.stderr));
    let got = pixelgrad::onnx::npy::load(&run_dir.join("output_0.npy")).unwrap();
    let want = pixelgrad::onnx::npy::load(&ort_dir.join("output_0.npy")).unwrap();
    assert_eq!(got.shape, vec![3, 10]);
    let err = got.to_f32().iter().zip(want.to_f32()).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(err < 1e-4, "pixelgrad vs onnxruntime on the exported CNN: {err}");
    let _ = fx;
    std::fs::remove_dir_all(&d).ok();
    fails_with(&["export", "--model-file", "/nonexistent.safetensors", "--onnx", "/tmp/x.onnx"], "/nonexistent.safetensors");
}

/// Writes an RGB PNG with a smooth pattern; returns its RGBA bytes.
fn write_png(path: &Path, w: usize, h: usize) -> Vec<u8> {
    let rgb: Vec<u8> = (0..w * h * 3).map(|i| ((i / 3 % w) * 255 / w + (i / 3 / w) * 80 / h + (i % 3) * 50) as u8).collect();
    let file = std::fs::File::create(path).unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w as u32, h as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header().unwrap().write_image_data(&rgb).unwrap();
    rgb.chunks(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect()
}

#[test]
fn run_takes_a_png_resized_and_normalised_on_the_device() {
    use pixelgrad::image::host::{to_tensor_values, Rgba8};
    use pixelgrad::image::{Fit, PixelSpec};
    let fx = fixtures();
    let cls = fx.join("models/ppocr_cls/model.onnx");
    let d = std::env::temp_dir().join(format!("pixelgrad-run-png-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let img = d.join("photo.png");
    let rgba = write_png(&img, 150, 40);
    // The host reference of the same preprocessing, fed as .npy.
    let spec = PixelSpec { size: Some((48, 192)), fit: Fit::Contain, mean: [0.5; 4], std: [0.5; 4], ..PixelSpec::default() };
    let (v, dims, _) = to_tensor_values(Rgba8::packed(&rgba, 150, 40).unwrap(), &spec, "test").unwrap();
    let npy = d.join("x.npy");
    std::fs::write(&npy, pixelgrad::onnx::npy::write(&pixelgrad::onnx::HostTensor::f32(dims.to_vec(), v)).unwrap()).unwrap();
    let run = |input: String, out: &str, extra: &[&str]| {
        let o = bin()
            .args(["run", cls.to_str().unwrap(), "--backend", "cpu", "--input", &input, "--out"])
            .arg(d.join(out))
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let flags = ["--resize", "48,192", "--fit", "contain", "--mean", "0.5", "--std", "0.5,0.5,0.5"];
    let log = run(format!("x={}", img.display()), "png", &flags);
    assert!(log.contains("150x40 -> [1, 3, 48, 192] (contain, content 180x48 at (6, 0))"), "{log}");
    run(format!("x={}", npy.display()), "npy", &[]);
    let got = pixelgrad::onnx::npy::load(&d.join("png/output_0.npy")).unwrap().to_f32();
    let want = pixelgrad::onnx::npy::load(&d.join("npy/output_0.npy")).unwrap().to_f32();
    assert_eq!(got.len(), 2);
    let err = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(err < 1e-5, "PNG path vs host reference: {err}");
    let x = format!("x={}", img.display());
    let cls = cls.to_str().unwrap();
    fails_with(&["run", cls, "--backend", "cpu", "--input", &x, "--resize", "0,4"], "zero side");
    fails_with(&["run", cls, "--backend", "cpu", "--input", &x, "--resize", "48"], "--resize '48'");
    fails_with(&["run", cls, "--backend", "cpu", "--input", &x, "--fit", "stretch"], "fit 'stretch'");
    fails_with(&["run", cls, "--backend", "cpu", "--input", &x, "--mean", "0.5,0.5"], "--mean");
    let junk = d.join("junk.png");
    std::fs::write(&junk, b"not a png").unwrap();
    fails_with(&["run", cls, "--backend", "cpu", "--input", &format!("x={}", junk.display())], "not a readable PNG");
    std::fs::remove_dir_all(&d).ok();
}

/// The report says how the products compute on f16 weights (the CPU widens them first; WebGPU
/// reads them directly on its tiled kernels, and on a CPU adapter such as CI's lavapipe, whose
/// register kernels have no f16 variant, widens them too unless PIXELGRAD_WGPU_MATMUL=tiled)
/// and whether WebGPU offers shader-f16 (null on the CPU).
#[test]
fn run_reports_arithmetic_and_shader_f16() {
    let f = fixtures().join("models").join("ppocr_cls");
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-onnx-run-arith-{}", std::process::id()));
    let input = format!("x={}", f.join("input_0.npy").display());
    let runs = [
        ("cpu", false, "f32 (widened)", None),
        ("webgpu", true, "f32 (f16 weights read directly)", Some("tiled")),
        ("webgpu", true, "f32 (widened)", Some("registers")),
    ];
    for (backend, want_bool, arith, matmul) in runs {
        let mut cmd = bin();
        if let Some(m) = matmul {
            cmd.env("PIXELGRAD_WGPU_MATMUL", m);
        }
        let out = cmd
            .args([
                "run",
                f.join("model.onnx").to_str().unwrap(),
                "--input",
                &input,
                "--backend",
                backend,
                "--precision",
                "f16",
                "--json",
                "--out",
            ])
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let j: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
        assert_eq!(j["arithmetic"], arith, "{j}");
        assert_eq!(j["shader_f16"].is_boolean(), want_bool, "{j}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("arithmetic {arith}")));
    }
    std::fs::remove_dir_all(&out_dir).ok();
}

/// `pixelgrad run model.onnx` reads the weights onnx saved beside it (`model.onnx_data`) and
/// matches onnxruntime; without that file, the one error line names it.
#[test]
fn run_reads_external_data_beside_the_model() {
    let case = fixtures().join("external/external_one_file");
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-onnx-run-external-{}", std::process::id()));
    let input = format!("x={}", case.join("input_0.npy").display());
    let out = bin()
        .args(["run", case.join("model.onnx").to_str().unwrap(), "--input", &input, "--backend", "cpu", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got = pixelgrad::onnx::npy::load(&out_dir.join("output_0.npy")).unwrap().to_f32();
    let want = pixelgrad::onnx::npy::load(&case.join("expected_0.npy")).unwrap().to_f32();
    std::fs::remove_dir_all(&out_dir).ok();
    assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs().max(1.0)), "{got:?} vs {want:?}");
    // the model alone, in another folder
    let alone = std::env::temp_dir().join(format!("pixelgrad-onnx-run-external-alone-{}", std::process::id()));
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(case.join("model.onnx"), alone.join("model.onnx")).unwrap();
    fails_with(&["run", alone.join("model.onnx").to_str().unwrap(), "--input", &input, "--backend", "cpu"], "model.onnx_data");
    std::fs::remove_dir_all(&alone).ok();
}

/// `pixelgrad inspect` describes a model without running it: a model with an operator
/// pixelgrad does not read (Det) exits 0, lists it as refused with its domain and opset, and
/// names no backend for it; a control-flow model counts the nodes of its subgraphs; the
/// external-data model names its file and bytes; a file that is not ONNX is one error line.
#[test]
fn inspect_reports_operators_support_weights_and_refusals() {
    let f = fixtures();
    let inspect = |path: &Path, json: bool| {
        let mut c = bin();
        c.arg("inspect").arg(path);
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let bad = f.join("bad/unsupported_op.onnx");
    let j: serde_json::Value = serde_json::from_str(&inspect(&bad, true)).unwrap();
    assert_eq!(j["loads"], false, "{j}");
    assert_eq!(j["operators"][0]["op"], "Det", "{j}");
    assert_eq!(j["operators"][0]["supported"], false, "{j}");
    assert_eq!(j["operators"][0]["backends"]["webgl"], false, "{j}");
    let refused = j["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{j}");
    assert!(refused[0].as_str().unwrap().contains("Det (domain 'ai.onnx', opset 13)"), "{j}");
    assert_eq!(j["inputs"][0]["name"], "x");
    assert_eq!(j["inputs"][0]["shape"], serde_json::json!([2, 3]));
    let text = inspect(&bad, false);
    assert!(text.contains("loads: no") && text.contains("refused: unsupported operator Det"), "{text}");

    // an If: its branches' nodes are counted, every operator runs on every backend
    let j: serde_json::Value = serde_json::from_str(&inspect(&f.join("ops/if_data_condition/model.onnx"), true)).unwrap();
    assert_eq!(j["loads"], true, "{j}");
    assert_eq!(j["nodes"], 7, "{j}"); // ReduceSum, Greater, If + 2 per branch
    let ops = j["operators"].as_array().unwrap();
    assert!(ops.iter().all(|o| o["backends"]["cpu"] == true && o["backends"]["webgpu"] == true), "{j}");
    // initializers w [2,3] and zero [] in the graph, t [2,3] in the then-branch: 13 floats
    assert_eq!(j["weightBytesByType"]["float"]["bytes"], 13 * 4, "{j}");

    let j: serde_json::Value = serde_json::from_str(&inspect(&f.join("external/external_one_file/model.onnx"), true)).unwrap();
    assert_eq!(j["loads"], true, "{j}");
    assert_eq!(j["externalData"]["model.onnx_data"], (32 + 8 + 24) * 4, "{j}");

    let not_onnx = std::env::temp_dir().join(format!("pixelgrad-inspect-not-onnx-{}", std::process::id()));
    std::fs::write(&not_onnx, b"\xff\xff\xff\xff not a model").unwrap();
    fails_with(&["inspect", not_onnx.to_str().unwrap()], "not a valid ONNX model");
    std::fs::remove_file(&not_onnx).ok();
}
