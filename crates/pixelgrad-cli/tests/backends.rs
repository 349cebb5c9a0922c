//! The same seeded training run on every backend: the GPU backends (Mesa lavapipe for WebGPU,
//! llvmpipe through EGL for WebGL in CI) must log the same losses as the CPU, to 1e-3 relative,
//! for the first 50 readbacks, and reach the same test accuracy within half a point.

use std::process::Command;

fn train(backend: &str) -> serde_json::Value {
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-cmp-{}-{backend}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
        .args(["train", "--backend", backend, "--epochs", "2", "--log-every", "1", "--seed", "7", "--json", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{backend}: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&out_dir).ok();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

fn losses(j: &serde_json::Value) -> Vec<f64> {
    j["losses"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

fn same_run_as_cpu(backend: &str) {
    let cpu = train("cpu");
    let gpu = train(backend);
    assert_eq!(gpu["backend"], backend);
    let (lc, lg) = (losses(&cpu), losses(&gpu));
    assert!(lc.len() >= 50 && lg.len() == lc.len(), "{} vs {} logged losses", lc.len(), lg.len());
    for i in 0..50 {
        let rel = (lg[i] - lc[i]).abs() / lc[i].abs();
        assert!(rel < 1e-3, "{backend}: logged loss {i}: {} vs cpu {} (relative {rel:.2e})", lg[i], lc[i]);
    }
    let (ac, ag) = (cpu["test_accuracy"].as_f64().unwrap(), gpu["test_accuracy"].as_f64().unwrap());
    assert!((ac - ag).abs() <= 0.005, "{backend} test accuracy {ag} vs cpu {ac}");
}

#[test]
fn webgpu_matches_cpu_loss_curve() {
    same_run_as_cpu("webgpu");
}

#[test]
fn webgl_matches_cpu_loss_curve() {
    same_run_as_cpu("webgl");
}

#[test]
fn dump_weights_writes_one_image_per_epoch() {
    let dir = std::env::temp_dir().join(format!("pixelgrad-dump-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
        .args(["train", "--backend", "cpu", "--model", "cnn", "--epochs", "2", "--dump-weights"])
        .arg(dir.join("w"))
        .arg("--out")
        .arg(dir.join("run"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for e in ["epoch-001.png", "epoch-002.png"] {
        let bytes = std::fs::read(dir.join("w").join(e)).unwrap();
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        let px = &buf[..info.buffer_size()];
        // not blank: the colours vary (a diverging map of 16 random 3x3 filters)
        let distinct: std::collections::HashSet<&[u8]> = px.chunks(4).collect();
        assert!(distinct.len() > 10, "{e}: only {} distinct colours", distinct.len());
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn train_precision(backend: &str, precision: &str) -> std::process::Output {
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-prec-{}-{backend}-{precision}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
        .args(["train", "--backend", backend, "--epochs", "1", "--precision", precision, "--json", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&out_dir).ok();
    out
}

/// `--precision mixed` reports what ran: mixed with half the activation bytes on cpu, webgpu
/// and webgl (WebGL2), the f32 fallback and its reason on webgl1 (no integer textures, so no
/// f16 results); a bad name is refused.
#[test]
fn train_precision_mixed_reports_what_ran() {
    for (backend, mixed) in [("cpu", true), ("webgpu", true), ("webgl", true), ("webgl1", false)] {
        let out = train_precision(backend, "mixed");
        assert!(out.status.success(), "{backend}: {}", String::from_utf8_lossy(&out.stderr));
        let j: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
        let (a, a32) = (j["activation_bytes"].as_u64().unwrap(), j["activation_bytes_f32"].as_u64().unwrap());
        assert!(j["test_accuracy"].as_f64().unwrap() > 0.85, "{backend}: {j}");
        if mixed {
            assert_eq!(j["precision"], "mixed", "{backend}: {j}");
            assert!(j["precision_fallback"].is_null() && j["loss_scale"].as_f64().unwrap() > 0.0);
            assert!(a as f64 <= 0.6 * a32 as f64, "{backend}: {a} vs {a32}");
        } else {
            assert_eq!(j["precision"], "f32", "{backend}: {j}");
            assert!(j["precision_fallback"].as_str().unwrap().contains("f16"), "{j}");
            assert_eq!(a, a32);
        }
    }
    let out = train_precision("cpu", "bf16");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("f32 or mixed"));
}

/// A WebGL2 device without 32-bit float render targets (Mesa's `MESA_EXTENSION_OVERRIDE`
/// hides them from this child process: the RGBA16F fallback): the digits MLP with Adam
/// trained to chance there with no error. The run's first steps are checked against the CPU
/// and printed with the measured losses; with Adam's half-safe state
/// (`pixelgrad_nn::optim::half`) they follow the CPU's and training goes on on the device
/// (before it, Adam's moments underflowed and the run fell back to the CPU).
#[test]
fn webgl_without_float_render_targets_is_checked_and_trains_on_the_device() {
    let out_dir = std::env::temp_dir().join(format!("pixelgrad-half-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
        .env("MESA_EXTENSION_OVERRIDE", "-GL_EXT_color_buffer_float")
        .args(["train", "--backend", "webgl", "--epochs", "1", "--seed", "7", "--json", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&out_dir).ok();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("precision check (tensors stored in RGBA16F"), "{stderr}");
    assert!(stderr.contains("training continues on webgl"), "{stderr}");
    // Mesa writes a line of its own to stdout about the override: the JSON is the last object.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let j: serde_json::Value = serde_json::from_str(stdout.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    let c = &j["precision_check"];
    assert_eq!(c["action"], "continued", "{j}");
    assert_eq!(c["device_losses"].as_array().unwrap().len(), 8);
    assert!(j["test_accuracy"].as_f64().unwrap() > 0.85, "{j}");
}

/// `pixelgrad backends` states the precision of the backend it picks (f32 here: auto picks a
/// full-precision GPU backend or the CPU).
#[test]
fn backends_states_the_precision() {
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).arg("backends").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().any(|l| l == "precision: f32"), "{stdout}");
}

/// `pixelgrad backends` prints the chosen backend's capabilities (`Backend::caps`, measured at
/// start-up) as one JSON object, and they agree with the lines above it.
#[test]
fn backends_prints_the_caps_of_the_chosen_backend() {
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).arg("backends").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find_map(|l| l.strip_prefix("caps: ")).unwrap_or_else(|| panic!("no caps line: {stdout}"));
    let caps: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    for k in ["conv", "int8", "int8Storage", "f16Storage", "f16Matmul", "narrowF16"] {
        assert!(caps[k].is_boolean(), "{k}: {caps}");
    }
    // Full precision (the line above says f32), so no reason for less.
    assert!(caps["reducedPrecision"].is_null(), "{caps}");
    let using = stdout.lines().find_map(|l| l.strip_prefix("using: ")).unwrap_or_else(|| panic!("{stdout}"));
    if using.starts_with("cpu") {
        assert_eq!(caps["conv"], true, "{caps}");
        assert_eq!(caps["int8Kernel"], "cpu-i32", "{caps}");
        assert!(caps["shaderF16"].is_null(), "{caps}");
    } else if using.starts_with("webgpu") {
        assert!(caps["shaderF16"].is_boolean(), "{caps}");
    }
}

/// The last JSON object of a `pixelgrad backends --json` run (Mesa may print a line of its own
/// to stdout first).
fn backends_json(args: &[&str], env: Option<(&str, &str)>) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pixelgrad"));
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = cmd.arg("backends").args(args).arg("--json").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON: {stdout}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// `pixelgrad backends` says what will work, from the measured caps: storage and arithmetic
/// precision, largest texture and tensor, and the training verdict with its reason, in text
/// and as JSON. Auto picks a full-precision backend here, so training is reliable.
#[test]
fn backends_states_what_will_work() {
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).arg("backends").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.lines().any(|l| l == "storage: 23 mantissa bits (measured)"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("largest tensor: ") && l.ends_with(" elements")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("largest texture side: ")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("training: reliable (")), "{stdout}");

    let j = backends_json(&["--backend", "cpu"], None);
    assert!(j["using"].as_str().unwrap().starts_with("cpu"), "{j}");
    let c = &j["caps"];
    assert_eq!((c["storageMantissaBits"].as_u64(), c["arithmeticMantissaBits"].as_u64()), (Some(23), Some(23)), "{c}");
    assert_eq!(c["arithmetic"], "f32", "{c}");
    assert!(c["maxTextureSide"].is_null(), "{c}");
    assert!(c["maxTensorElements"].as_u64().unwrap() >= 1 << 30, "{c}");
    assert_eq!(c["training"], "reliable", "{c}");
    assert!(c["trainingReason"].as_str().unwrap().contains("full precision"), "{c}");
}

/// On a WebGL2 device without 32-bit float render targets (hidden from this child process by
/// `MESA_EXTENSION_OVERRIDE`) the named webgl backend measures 10 mantissa bits of storage
/// (RGBA16F) with highp arithmetic: training only with the half-precision measures. Its
/// texture limit is the driver's.
#[test]
fn backends_on_a_half_float_only_device_says_training_needs_the_half_measures() {
    let j = backends_json(&["--backend", "webgl"], Some(("MESA_EXTENSION_OVERRIDE", "-GL_EXT_color_buffer_float")));
    assert!(j["using"].as_str().unwrap().contains("RGBA16F"), "{j}");
    let c = &j["caps"];
    assert_eq!(c["storageMantissaBits"], 10, "{c}");
    assert_eq!(c["arithmetic"], "highp", "{c}");
    assert_eq!(c["training"], "reliable-with-half-measures", "{c}");
    assert!(c["trainingReason"].as_str().unwrap().contains("loss scaling"), "{c}");
    let side = c["maxTextureSide"].as_u64().unwrap();
    assert_eq!(c["maxTensorElements"].as_u64(), Some(side * side * 4), "{c}");
    assert!(c["reducedPrecision"].as_str().unwrap().contains("RGBA16F"), "{c}");
}

/// An unknown backend name is one `error:` line and exit status 1.
#[test]
fn backends_refuses_an_unknown_backend() {
    let out = Command::new(env!("CARGO_BIN_EXE_pixelgrad")).args(["backends", "--backend", "tpu", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().any(|l| l.starts_with("error: ") && l.contains("unknown backend 'tpu'")), "{stderr}");
    assert!(out.stdout.is_empty());
}
