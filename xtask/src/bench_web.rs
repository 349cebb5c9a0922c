//! `cargo xtask bench`: the side-by-side browser benchmark, pixelgrad {webgpu, webgl, cpu} vs
//! TensorFlow.js 4.22.0 {webgpu, webgl, wasm} in headless Chromium (`web/bench/run.mjs`), plus
//! the native `pixelgrad bench` for context. `cargo xtask bench --native [ARGS]` runs only the
//! native benchmark, as before. `cargo xtask bench --inference` runs the inference benchmark
//! instead: batch-1 latency of ONNX models, pixelgrad against ONNX Runtime Web
//! (`web/bench/inference.mjs`; see [`inference`]).
//!
//! Steps: `npm ci` in `web/` and `web/bench/` when their node_modules are missing, build the
//! npm package (`cargo xtask build-wasm`, skipped by `--no-build`), run the native benchmark
//! into `web/bench/results/native-latest.json` (skipped by `--quick` and `--no-native`), then
//! the browser run, which writes `web/bench/results/<date>.json` and regenerates
//! docs/benchmarks.md (what `cargo xtask bench-report` does alone).

use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str = "usage: cargo xtask bench [--quick] [--only TOKENS] [--no-build] [--no-native] [--no-markdown | --markdown FILE] [--tfjs-tuned] [--out FILE] [--timeout S]\n       cargo xtask bench --inference [--quick] [--only MODELS] [--pairs cpu,webgl,webgpu] [--no-build] [--no-markdown | --markdown FILE] [--out FILE]\n       cargo xtask bench --native [--backends cpu,webgpu,webgl] [--matmul 256,1024] [--seconds S]";

/// Options of the browser benchmark; everything not handled here is passed to run.mjs.
struct Options {
    build: bool,
    native: bool,
    quick: bool,
    passthrough: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options { build: true, native: true, quick: false, passthrough: Vec::new() };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--no-build" => o.build = false,
            "--no-native" => o.native = false,
            "--quick" => {
                o.quick = true;
                o.passthrough.push(a.clone());
            }
            "--no-markdown" | "--tfjs-tuned" => o.passthrough.push(a.clone()),
            "--only" | "--out" | "--timeout" | "--markdown" => {
                let v = it.next().ok_or(format!("{a} needs a value"))?;
                o.passthrough.extend([a.clone(), v.clone()]);
            }
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    Ok(o)
}

pub(crate) fn workspace_root() -> PathBuf {
    // xtask/ sits in the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// Runs `cmd`; Err with a readable message when it cannot start or exits non-zero.
fn status(cmd: &mut Command, what: &str) -> Result<(), String> {
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{what} failed ({s})")),
        Err(e) => Err(format!("could not run {what}: {e}")),
    }
}

/// `npm ci` in `dir` unless `marker` (a package folder under node_modules) is already there.
fn npm_ci(dir: &Path, marker: &str) -> Result<(), String> {
    if dir.join("node_modules").join(marker).is_dir() {
        return Ok(());
    }
    println!("xtask bench: npm ci in {}", dir.display());
    status(Command::new("npm").arg("ci").arg("--no-audit").arg("--no-fund").current_dir(dir), &format!("npm ci in {}", dir.display()))
}

/// The native benchmark into `out` (JSON); a failure only costs the native table.
fn native(root: &Path, out: &Path) -> bool {
    println!("xtask bench: native side (pixelgrad bench, release build)");
    let r = status(
        Command::new(env!("CARGO"))
            .args(["run", "--release", "-q", "-p", "pixelgrad-cli", "--", "bench", "--matmul", "256,512", "--seconds", "1", "--json-out"])
            .arg(out)
            .current_dir(root),
        "pixelgrad bench",
    );
    if let Err(e) = &r {
        eprintln!("xtask bench: native side skipped: {e}");
    }
    r.is_ok()
}

fn try_main(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let root = workspace_root();
    let web = root.join("web");
    npm_ci(&web, "playwright-core")?;
    npm_ci(&web.join("bench"), "@tensorflow/tfjs")?;
    npm_ci(&web.join("bench"), "onnxruntime-web")?;
    if o.build {
        // This binary is `cargo xtask`, so building through it reuses the compiled xtask.
        let me = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"))?;
        status(
            // with the threaded module: the CPU rows run with one thread and with all of them
            Command::new(me).args(["build-wasm", "--threads"]).current_dir(&root),
            "cargo xtask build-wasm --threads (pass --no-build to use the existing web/pkg)",
        )?;
    }
    let mut node = Command::new("node");
    node.arg(web.join("bench").join("run.mjs")).args(&o.passthrough).current_dir(&root);
    if o.native && !o.quick {
        let results = web.join("bench").join("results");
        std::fs::create_dir_all(&results).map_err(|e| format!("{}: {e}", results.display()))?;
        let out = results.join("native-latest.json");
        if native(&root, &out) {
            node.arg("--native-json").arg(&out);
        }
    }
    status(&mut node, "node web/bench/run.mjs")
}

/// `cargo xtask bench --inference`: the ONNX fixtures' Python venv and the PP-OCR models
/// (`scripts/onnx-fixtures.sh`), the benchmark's models (`web/bench/make_models.py` into
/// `web/bench/models/`), the npm package, then `web/bench/inference.mjs`.
fn inference(args: &[String]) -> Result<(), String> {
    let mut build = true;
    let mut pass = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--no-build" => build = false,
            "--quick" | "--no-markdown" => pass.push(a.clone()),
            "--only" | "--pairs" | "--out" | "--markdown" => {
                let v = it.next().ok_or(format!("{a} needs a value"))?;
                pass.extend([a.clone(), v.clone()]);
            }
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    let root = workspace_root();
    let web = root.join("web");
    npm_ci(&web, "playwright-core")?;
    npm_ci(&web.join("bench"), "onnxruntime-web")?;
    status(Command::new("bash").arg("scripts/onnx-fixtures.sh").current_dir(&root), "scripts/onnx-fixtures.sh")?;
    let python = root.join("target").join("onnx-venv").join("bin").join("python");
    let ppocr = root.join("target").join("onnx-pkgs").join("rapidocr_onnxruntime").join("models");
    status(
        Command::new(&python)
            .arg(web.join("bench").join("make_models.py"))
            .arg(web.join("bench").join("models"))
            .arg(&ppocr)
            .arg(root.join("target").join("onnx-fixtures"))
            .current_dir(&root),
        "web/bench/make_models.py",
    )?;
    if build {
        let me = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"))?;
        status(
            // with the threaded module: the CPU rows run with one thread and with all of them
            Command::new(me).args(["build-wasm", "--threads"]).current_dir(&root),
            "cargo xtask build-wasm --threads (pass --no-build to use the existing web/pkg)",
        )?;
    }
    status(Command::new("node").arg(web.join("bench").join("inference.mjs")).args(&pass).current_dir(&root), "node web/bench/inference.mjs")
}

/// Entry point of `cargo xtask bench`; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--inference") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--inference").cloned().collect();
        return match inference(&rest) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("xtask bench: {e}");
                1
            }
        };
    }
    if args.iter().any(|a| a == "--native") {
        let rest: Vec<&String> = args.iter().filter(|a| *a != "--native").collect();
        let r = status(
            Command::new(env!("CARGO")).args(["run", "--release", "-q", "-p", "pixelgrad-cli", "--", "bench"]).args(rest),
            "pixelgrad bench",
        );
        return match r {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("xtask bench: {e}");
                1
            }
        };
    }
    match try_main(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask bench: {e}");
            1
        }
    }
}
