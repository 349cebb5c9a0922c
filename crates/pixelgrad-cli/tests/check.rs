//! `pixelgrad check` natively on every backend (WebGPU on lavapipe, WebGL on llvmpipe in CI):
//! the default tiny network passes against the f64 reference; an injected wrong kernel
//! result fails with status 1 and names the tensor and the op. `backends --layouts` prints the
//! texture / buffer table.

use std::process::{Command, Output};

fn pixelgrad(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pixelgrad")).args(args).output().unwrap()
}

fn check_json(args: &[&str]) -> (Output, serde_json::Value) {
    let mut a = vec!["check", "--json"];
    a.extend_from_slice(args);
    let out = pixelgrad(&a);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no stdout: {}", String::from_utf8_lossy(&out.stderr)));
    let j = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    (out, j)
}

fn passes_on(backend: &str) {
    let (out, j) = check_json(&["--backend", backend, "--layers", "4,6,3", "--steps", "3"]);
    assert!(out.status.success(), "{backend}: {}\n{j}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(j["passed"], true, "{j}");
    assert!(j["backend"].as_str().unwrap().starts_with(backend), "{j}");
    // 2 layers: pre+act each, loss, 1 hidden gradient, 2 grads + 2 updates each: 14 per step
    assert_eq!(j["rows"].as_array().unwrap().len(), 3 * 14);
}

fn fault_named_on(backend: &str) {
    let (out, j) = check_json(&["--backend", backend, "--inject-fault", "sigmoid"]);
    assert_eq!(out.status.code(), Some(1), "{j}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("layer1.act") && err.contains("sigmoid"), "{err}");
    assert_eq!(j["passed"], false);
    assert_eq!(j["firstFailure"]["tensor"], "layer1.act", "{j}");
    assert_eq!(j["firstFailure"]["op"], "sigmoid");
    assert_eq!(j["firstFailure"]["step"], 1);
}

#[test]
fn check_passes_on_cpu_and_names_an_injected_fault() {
    passes_on("cpu");
    fault_named_on("cpu");
    // the table marks the first failure
    let out = pixelgrad(&["check", "--backend", "cpu", "--inject-fault", "matmul@0+0.5"]);
    let table = String::from_utf8_lossy(&out.stdout);
    let marked: Vec<&str> = table.lines().filter(|l| l.contains("<- FIRST FAILURE")).collect();
    assert_eq!(marked.len(), 1, "{table}");
    assert!(marked[0].contains("layer1.pre") && marked[0].contains("matmul"), "{table}");
}

#[test]
fn check_passes_on_webgpu_and_names_an_injected_fault() {
    passes_on("webgpu");
    fault_named_on("webgpu");
}

#[test]
fn check_passes_on_webgl_and_names_an_injected_fault() {
    passes_on("webgl");
    fault_named_on("webgl");
}

#[test]
fn check_passes_on_webgl1_and_names_an_injected_fault() {
    passes_on("webgl1");
    fault_named_on("webgl1");
}

#[test]
fn bad_check_arguments_are_one_line_errors() {
    for (args, needle) in [
        (&["check", "--layers", "4,x"][..], "--layers"),
        (&["check", "--backend", "cpu", "--layers", "4"][..], "layers"),
        (&["check", "--backend", "cpu", "--activation", "gelu"][..], "activation"),
        (&["check", "--backend", "cpu", "--inject-fault", "matmul@z"][..], "occurrence"),
    ] {
        let out = pixelgrad(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(needle) && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn backends_check_and_layouts() {
    let out = pixelgrad(&["backends", "--check", "--layouts"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{s}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(s.contains("cpu cross-check: PASS"), "{s}");
    for gpu in ["webgpu", "webgl"] {
        if s.contains(&format!("{gpu}: not available")) {
            continue;
        }
        assert!(s.contains(&format!("{gpu} cross-check: PASS")), "{s}");
        assert!(s.contains(&format!("{gpu} layout table")), "{s}");
    }
    // webgl: textures, 4 elements per texel; the first weight of the mlp preset (layer 1, after Flatten) is [64, 256]
    if !s.contains("webgl: not available") {
        let row = s.lines().find(|l| l.starts_with("1.weight") && l.contains("texture")).unwrap_or_else(|| panic!("{s}"));
        assert!(row.contains("4096/") && row.contains("RGBA32F") && row.contains("row-major fold"), "{row}");
    }
    if !s.contains("webgpu: not available") {
        assert!(s.lines().any(|l| l.starts_with("1.weight") && l.contains("buffer") && l.contains("16384/")), "{s}");
    }
}

/// `--inject-fault` is a test hook: it works (above) but `check --help` does not offer it.
#[test]
fn inject_fault_is_hidden_from_help() {
    let out = pixelgrad(&["check", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && help.contains("--layers"), "{help}");
    assert!(!help.contains("inject"), "{help}");
}

/// `backends`: auto tries webgpu, webgl, webgl1, cpu in that order, says why each was skipped,
/// and never chooses a software rasteriser (CI's lavapipe / llvmpipe, which `--backend webgl`
/// runs on): the CPU backend is faster than a GPU emulated on the same CPU.
#[test]
fn auto_tries_in_order_says_why_and_skips_software_rasterisers() {
    let out = pixelgrad(&["backends"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{s}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = s.lines().find_map(|l| l.strip_prefix("auto-selection: ")).unwrap_or_else(|| panic!("{s}"));
    let order = ["webgpu", "webgl", "webgl1", "cpu"];
    // One clause per backend, `NAME: chosen (..)` or `NAME: skipped (..)`; a reason may hold "; ".
    let mut clauses: Vec<String> = Vec::new();
    for part in line.split("; ") {
        match clauses.last_mut() {
            Some(last) if !order.iter().any(|b| part.starts_with(&format!("{b}: "))) => *last += &format!("; {part}"),
            _ => clauses.push(part.to_string()),
        }
    }
    for (c, b) in clauses.iter().zip(order) {
        assert!(c.starts_with(&format!("{b}: ")), "clause {c:?} out of the order {order:?}: {line}");
    }
    let (last, skipped) = clauses.split_last().unwrap();
    assert!(last.contains(": chosen ("), "{line}");
    for c in skipped {
        assert!(c.contains(": skipped (") && c.len() > c.find('(').unwrap() + 2, "a skip without its reason: {c}");
    }
    let software = ["llvmpipe", "lavapipe", "swiftshader"];
    let chosen = last.to_ascii_lowercase();
    assert!(!software.iter().any(|w| chosen.contains(w)), "auto chose a software rasteriser: {line}");
    for c in skipped.iter().filter(|c| software.iter().any(|w| c.to_ascii_lowercase().contains(w))) {
        assert!(c.contains("software rasteriser") && c.contains("--backend"), "{c}");
    }
}

/// `train --max-steps-per-second`: same losses as an unpaced run, not faster than asked
/// (lower bound only), and a bad rate is a one-line error.
#[test]
fn paced_train_logs_the_same_losses() {
    let run = |extra: &[&str]| {
        let out_dir = std::env::temp_dir().join(format!("pixelgrad-paced-{}-{}", std::process::id(), extra.len()));
        let mut args = vec!["train", "--backend", "cpu", "--epochs", "1", "--batch-size", "256", "--log-every", "1", "--json", "--out"];
        let dir = out_dir.to_string_lossy().to_string();
        args.push(&dir);
        args.extend_from_slice(extra);
        let t0 = std::time::Instant::now();
        let out = pixelgrad(&args);
        let secs = t0.elapsed().as_secs_f64();
        std::fs::remove_dir_all(&out_dir).ok();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let j: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        (j["losses"].clone(), secs)
    };
    let (fast, _) = run(&[]);
    let (slow, secs) = run(&["--max-steps-per-second", "10"]);
    assert_eq!(fast, slow);
    let steps = fast.as_array().unwrap().len();
    assert!(steps >= 3, "{fast}");
    assert!(secs >= 0.9 * (steps - 1) as f64 / 10.0, "{steps} steps at 10/s took {secs:.2} s");
    let out =
        pixelgrad(&["train", "--backend", "cpu", "--epochs", "1", "--max-steps-per-second", "0", "--out", "/tmp/pixelgrad-paced-bad"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("max_steps_per_second"), "{err}");
}
