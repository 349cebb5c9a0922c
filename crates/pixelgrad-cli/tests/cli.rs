//! The `pixelgrad` binary end to end: default training, eval/predict on the saved model, and
//! every bad-input path giving one clear line on stderr and exit status 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn last_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no stdout; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {line}"))
}

/// Runs and expects failure with a one-line `error: ...` message containing `needle`.
fn fails_with(args: &[&str], needle: &str) {
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "args {args:?}: status {:?}, stderr {err}", out.status);
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "panic for {args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line for {args:?}, got: {err}");
    assert!(lines[0].starts_with("error: ") && lines[0].contains(needle), "args {args:?}: {err}");
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

#[test]
fn default_training_reaches_95_percent_then_eval_and_predict() {
    let out_dir = tmp("default");
    let out = bin().args(["train", "--backend", "cpu", "--json", "--out"]).arg(&out_dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j = last_json(&out);
    let acc = j["test_accuracy"].as_f64().unwrap();
    assert!(acc >= 0.95, "default digits run reached only {acc}");
    assert_eq!(j["backend"], "cpu");
    assert!(j["epochs"].as_u64().unwrap() > 0 && j["train_seconds"].as_f64().unwrap() > 0.0 && j["test_loss"].as_f64().is_some());
    for f in ["model.safetensors", "metrics.csv", "loss.png"] {
        assert!(out_dir.join(f).metadata().unwrap().len() > 0, "{f} missing");
    }
    let csv = std::fs::read_to_string(out_dir.join("metrics.csv")).unwrap();
    assert!(csv.starts_with("step,epoch,loss,accuracy,test_accuracy"));
    assert!(csv.lines().count() > 10);
    // the test accuracy on the last row of each epoch, the last one equal to the run's
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let with_test: Vec<&Vec<&str>> = rows.iter().filter(|r| !r[4].is_empty()).collect();
    assert_eq!(with_test.len() as u64, j["epochs"].as_u64().unwrap(), "one test accuracy per epoch:\n{csv}");
    for (i, r) in rows.iter().enumerate() {
        let last_of_epoch = rows.get(i + 1).is_none_or(|n| n[1] != r[1]);
        assert_eq!(!r[4].is_empty(), last_of_epoch, "row {r:?}");
    }
    let last: f64 = with_test.last().unwrap()[4].parse().unwrap();
    assert!((last - acc).abs() < 1e-6, "metrics.csv ends at {last}, the run at {acc}");

    // eval on the same split gives the same accuracy
    let model = out_dir.join("model.safetensors");
    let ev = bin().args(["eval", "--backend", "cpu", "--json", "--model-file"]).arg(&model).output().unwrap();
    assert!(ev.status.success(), "{}", String::from_utf8_lossy(&ev.stderr));
    let e = last_json(&ev);
    assert!((e["test_accuracy"].as_f64().unwrap() - acc).abs() < 1e-6, "{e} vs {acc}");

    // predict a PNG: a bright vertical bar on black, 16x16 (a "1")
    let png_path = out_dir.join("one.png");
    let mut px = vec![0u8; 16 * 16];
    for y in 2..14 {
        for x in 7..9 {
            px[y * 16 + x] = 255;
        }
    }
    let f = std::fs::File::create(&png_path).unwrap();
    let mut enc = png::Encoder::new(f, 16, 16);
    enc.set_color(png::ColorType::Grayscale);
    enc.write_header().unwrap().write_image_data(&px).unwrap();
    let pr = bin().args(["predict", "--backend", "cpu", "--json", "--model-file"]).arg(&model).arg(&png_path).output().unwrap();
    assert!(pr.status.success(), "{}", String::from_utf8_lossy(&pr.stderr));
    let p = last_json(&pr);
    let probs: Vec<f64> = p["probabilities"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(probs.len(), 10);
    assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-4);
    assert_eq!(p["class"], 1, "a vertical bar should read as a 1: {p}");
    std::fs::remove_dir_all(&out_dir).ok();
}

#[test]
fn seed_mlp_trains_on_the_48_input_task() {
    let out_dir = tmp("seed");
    let out = bin()
        .args(["train", "--backend", "cpu", "--model", "seed-mlp", "--epochs", "2", "--json", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j = last_json(&out);
    assert!(j["test_accuracy"].as_f64().unwrap() > 0.8, "{j}");
    std::fs::remove_dir_all(&out_dir).ok();
}

#[test]
fn bad_arguments_and_missing_data() {
    fails_with(&["train", "--dataset", "idx:/nonexistent/dir"], "/nonexistent/dir");
    fails_with(&["train", "--dataset", "csv:/nonexistent.csv"], "/nonexistent.csv");
    fails_with(&["train", "--dataset", "imagenet"], "unknown dataset");
    fails_with(&["train", "--model", "resnet"], "unknown model");
    fails_with(&["train", "--optimizer", "lbfgs"], "unknown optimizer");
    fails_with(&["train", "--backend", "tpu"], "unknown backend");
    fails_with(&["train", "--lr=-1"], "--lr");
    fails_with(&["train", "--lr=0"], "--lr");
    fails_with(&["train", "--batch-size", "0"], "--batch-size");
    fails_with(&["eval", "--model-file", "/nonexistent/model.safetensors"], "/nonexistent/model.safetensors");
}

#[test]
fn corrupt_files_give_one_line_errors() {
    let d = tmp("corrupt");
    // truncated IDX: valid header claiming 10 images, no pixels
    let mut hdr = vec![0, 0, 8, 3];
    for v in [10u32, 28, 28] {
        hdr.extend_from_slice(&v.to_be_bytes());
    }
    for f in ["train-images-idx3-ubyte", "t10k-images-idx3-ubyte"] {
        std::fs::write(d.join(f), &hdr).unwrap();
    }
    for f in ["train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"] {
        std::fs::write(d.join(f), [0, 0, 8, 1, 0, 0, 0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0]).unwrap();
    }
    fails_with(&["train", "--dataset", &format!("idx:{}", d.display())], "truncated");
    // CSV with a non-number
    let csv = d.join("bad.csv");
    std::fs::write(&csv, "1,2,3,0\n4,x,6,1\n").unwrap();
    fails_with(&["train", "--dataset", &format!("csv:{}", csv.display())], "line 2");
    // a model file that is not safetensors
    let junk = d.join("junk.safetensors");
    std::fs::write(&junk, b"this is not a model").unwrap();
    fails_with(&["eval", "--model-file", junk.to_str().unwrap()], "safetensors");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn model_file_that_does_not_fit_its_architecture() {
    use pixelgrad::nn::presets::{ModelSpec, Preset, SPEC_KEY};
    let d = tmp("mismatch");
    let dev = pixelgrad::Device::new(pixelgrad::cpu::CpuBackend::new());
    // weights of a 3-class mlp labelled as a 10-class mlp
    let m = ModelSpec { preset: Preset::Mlp, input: [1, 8, 8], classes: 3 }.build(&dev, 0).unwrap();
    let label = ModelSpec { preset: Preset::Mlp, input: [1, 8, 8], classes: 10 };
    let meta = std::collections::HashMap::from([(SPEC_KEY.to_string(), label.to_meta())]);
    let f = d.join("m.safetensors");
    pixelgrad::nn::io::save(&m, &f, &meta).unwrap();
    fails_with(&["eval", "--model-file", f.to_str().unwrap()], "[256, 3]");
    std::fs::remove_dir_all(&d).ok();
    let _ = repo_root();
}

/// `pixelgrad privacy` answers with the node's own accountant (itself checked against
/// dp-accounting in the flower crate's tests), and refuses what has no answer.
#[test]
fn privacy_reports_the_accountants_epsilon_and_refuses_bad_settings() {
    use pixelgrad_flower::accountant::RdpAccountant;
    let out = bin().args(["privacy", "--noise-multiplier", "1.1", "--releases", "20", "--delta", "1e-5", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j = last_json(&out);
    let mut acc = RdpAccountant::new();
    acc.compose(1.0, 1.1, 20);
    assert_eq!(j["epsilon"].as_f64().unwrap(), acc.epsilon(1e-5));
    assert_eq!(j["releases"], 20);
    // more releases cost more; sampling lowers the cost
    let eps = |extra: &[&str]| {
        let mut args = vec!["privacy", "--noise-multiplier", "1.1", "--json"];
        args.extend_from_slice(extra);
        last_json(&bin().args(&args).output().unwrap())["epsilon"].as_f64().unwrap()
    };
    assert!(eps(&["--releases", "40"]) > eps(&["--releases", "20"]));
    assert!(eps(&["--releases", "20", "--sampling-rate", "0.1"]) < eps(&["--releases", "20"]));
    // local DP's per-round setting as a multiplier: std sqrt(2 ln(1.25/delta)) C / eps over C
    let j = last_json(&bin().args(["privacy", "--local-dp", "2,1e-5,5", "--json"]).output().unwrap());
    let z = (2.0 * (1.25f64 / 1e-5).ln()).sqrt() / 2.0;
    assert!((j["noise_multiplier"].as_f64().unwrap() - z).abs() < 1e-12, "{j}");
    fails_with(&["privacy", "--noise-multiplier", "0"], "noise multiplier must be a positive number");
    fails_with(&["privacy", "--noise-multiplier", "1", "--releases", "0"], "--releases must be between");
    fails_with(&["privacy", "--noise-multiplier", "1", "--sampling-rate", "1.5"], "--sampling-rate must be in");
    fails_with(&["privacy", "--noise-multiplier", "1", "--delta", "1"], "--delta must be in");
    fails_with(&["privacy", "--local-dp", "2,1e-5"], "--local-dp");
}
