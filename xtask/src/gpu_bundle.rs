//! `cargo xtask gpu-bundle`: everything `scripts/gpu-bench.sh` needs on a GPU machine without
//! network or a Rust toolchain, in one folder under 64 MiB (issue 45 item 8).
//!
//! The bundle holds the release `pixelgrad` CLI, the release `burn-side` (Burn's wgpu backend on
//! the same training workloads, `bench/burn-side/`), the inference benchmark's models
//! (`web/bench/make_models.py`, run with the pinned ONNX venv that `scripts/onnx-fixtures.sh`
//! makes; the float and int8 files pixelgrad loads, not ONNX Runtime's fp16 copies), one input
//! `.npy` per model input (the PP-OCR models' rendered text images, MobileNet's page input),
//! `models/models.tsv` (what the script runs), `BUNDLE.txt` (commit, date, profile) and the
//! script itself. The training workloads make their data from a fixed seed: no data set travels.
//!
//! Binaries are copied and stripped (`strip`, when the machine has it) rather than built with a
//! stripping profile, so the release builds `cargo xtask bench-burn` uses stay valid. The total
//! is checked against [`LIMIT_BYTES`]; over it, the pack step fails and lists every file's size.
//!
//! `--debug` packs debug builds (for the local test of the script; never for numbers),
//! `--pixelgrad-bin`/`--burn-bin` take binaries already built, `--no-burn` leaves Burn out (the
//! script then reports the Burn side as missing), `--models DIR` takes an existing
//! `make_models.py` output.

use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str =
    "usage: cargo xtask gpu-bundle [--out DIR] [--debug] [--no-burn] [--pixelgrad-bin FILE] [--burn-bin FILE] [--models DIR]";

/// What a developer can carry to the GPU machine (issue 45: "under 64 MiB").
pub const LIMIT_BYTES: u64 = 64 << 20;

struct Options {
    out: Option<PathBuf>,
    debug: bool,
    burn: bool,
    pixelgrad_bin: Option<PathBuf>,
    burn_bin: Option<PathBuf>,
    models: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options { out: None, debug: false, burn: true, pixelgrad_bin: None, burn_bin: None, models: None };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().map(PathBuf::from).ok_or(format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--out" => o.out = Some(value()?),
            "--pixelgrad-bin" => o.pixelgrad_bin = Some(value()?),
            "--burn-bin" => o.burn_bin = Some(value()?),
            "--models" => o.models = Some(value()?),
            "--debug" => o.debug = true,
            "--no-burn" => o.burn = false,
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    if !o.burn && o.burn_bin.is_some() {
        return Err(format!("--no-burn and --burn-bin contradict each other\n{USAGE}"));
    }
    Ok(o)
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("could not run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// One benchmark model as the bundle's `models/models.tsv` lists it.
#[derive(Debug, PartialEq)]
pub struct ModelRow {
    /// Figure id: the benchmark's name with spaces as dashes (`mobilenet-v1-0.5-128-int8`).
    pub id: String,
    /// The .onnx file pixelgrad loads.
    pub file: String,
    pub input: String,
    /// The input .npy in the bundle.
    pub npy: String,
    /// `pixelgrad run --precision`: f16 for the benchmark's f16 rows, else auto.
    pub precision: String,
    pub shape: Vec<usize>,
    /// The raw little-endian f32 input file of `make_models.py`, or None for the page's input.
    pub input_file: Option<String>,
    /// Run by `gpu-bench.sh --quick` too: every float model, and the first model of each
    /// reduced form (f16, int8), so a lavapipe run covers each form once.
    pub quick: bool,
}

/// The rows of `make_models.py`'s `models.json`.
pub fn model_rows(models_json: &str) -> Result<Vec<ModelRow>, String> {
    let v: serde_json::Value = serde_json::from_str(models_json).map_err(|e| format!("models.json: {e}"))?;
    let list = v.as_array().ok_or("models.json: expected a list")?;
    let mut rows = Vec::new();
    let mut forms_seen = Vec::new();
    for m in list {
        let text = |k: &str| m[k].as_str().map(str::to_string).ok_or(format!("models.json: an entry lacks \"{k}\": {m}"));
        let name = text("name")?;
        let shape: Vec<usize> = m["shape"]
            .as_array()
            .ok_or(format!("models.json: {name} lacks \"shape\""))?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize).ok_or(format!("models.json: {name}: shape {} is not a list of sizes", m["shape"])))
            .collect::<Result<_, _>>()?;
        let input_file = m["inputFile"].as_str().map(str::to_string);
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let npy = match &input_file {
            Some(f) => format!("{}.npy", f.trim_end_matches(".f32")),
            None => format!("page-input-{}.npy", dims.join("x")),
        };
        let precision = if m["precision"].as_str() == Some("f16") { "f16" } else { "auto" };
        let quick = match m["form"].as_str() {
            None => true,
            Some(form) if forms_seen.iter().any(|f| f == form) => false,
            Some(form) => {
                forms_seen.push(form.to_string());
                true
            }
        };
        rows.push(ModelRow {
            id: name.replace(' ', "-"),
            file: text("file")?,
            input: text("input")?,
            npy,
            precision: precision.into(),
            shape,
            input_file,
            quick,
        });
    }
    Ok(rows)
}

/// `models.tsv`: one model per line, tab-separated id, file, input name, npy, precision, and
/// `quick` or `full` (whether `--quick` runs it).
pub fn tsv(rows: &[ModelRow]) -> String {
    let mut s = String::from("# id\tfile\tinput\tnpy\tprecision\tquick|full (written by cargo xtask gpu-bundle)\n");
    for r in rows {
        let q = if r.quick { "quick" } else { "full" };
        s += &format!("{}\t{}\t{}\t{}\t{}\t{q}\n", r.id, r.file, r.input, r.npy, r.precision);
    }
    s
}

/// The browser benchmark's deterministic input (`web/bench/make_models.py` `bench_input`):
/// fract(sin(i * 12.9898) * 43758.5453) as f32.
pub fn page_input(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let v = (i as f64 * 12.9898).sin() * 43758.5453;
            (v - v.floor()) as f32
        })
        .collect()
}

/// A little-endian f32 `.npy` file (format version 1.0; the header padded to 64 bytes).
pub fn npy_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {tuple}, }}");
    // magic (6) + version (2) + header length (2) + header, ending in '\n', a multiple of 64
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for x in data {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Every file under `dir` with its size, sorted by path.
fn sizes(dir: &Path) -> Result<Vec<(String, u64)>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io(&d))? {
            let e = e.map_err(io(&d))?;
            let meta = e.metadata().map_err(io(&e.path()))?;
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).map(|p| p.display().to_string()).unwrap_or_default();
                out.push((rel, meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The size table, and Err when the total exceeds `limit`.
pub fn check_total(files: &[(String, u64)], limit: u64) -> Result<String, String> {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let total: u64 = files.iter().map(|f| f.1).sum();
    let mut table = String::new();
    for (name, n) in files {
        table += &format!("{:>9.2} MiB  {name}\n", mib(*n));
    }
    table += &format!("{:>9.2} MiB  total (limit {:.0} MiB)\n", mib(total), mib(limit));
    if total > limit {
        return Err(format!("the bundle is {:.2} MiB, over the {:.0} MiB a developer can carry:\n{table}", mib(total), mib(limit)));
    }
    Ok(table)
}

/// Copies a binary into the bundle and strips it when `strip` is on this machine.
fn copy_binary(from: &Path, to: &Path) -> Result<(), String> {
    if !from.is_file() {
        return Err(format!("{}: no such binary", from.display()));
    }
    std::fs::copy(from, to).map_err(io(from))?;
    // only ELF files (a test's stand-in may be a shell script)
    let elf = std::fs::read(to).map_err(io(to))?.starts_with(b"\x7fELF");
    if !elf {
        return Ok(());
    }
    match Command::new("strip").arg(to).status() {
        Ok(s) if s.success() => {}
        _ => eprintln!("xtask gpu-bundle: could not strip {} (copied as built)", to.display()),
    }
    Ok(())
}

fn text_of(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The models folder: `--models`, else `make_models.py` run into `scratch`.
fn make_models(root: &Path, given: Option<&Path>, scratch: &Path) -> Result<PathBuf, String> {
    if let Some(dir) = given {
        return Ok(dir.to_path_buf());
    }
    let target = root.join("target");
    let python = target.join("onnx-venv").join("bin").join("python");
    let ppocr = target.join("onnx-pkgs").join("rapidocr_onnxruntime").join("models");
    let fixtures = target.join("onnx-fixtures");
    for need in [&python, &ppocr, &fixtures] {
        if !need.exists() {
            return Err(format!(
                "{} is missing: run `bash scripts/onnx-fixtures.sh` first (the pinned ONNX venv and the PP-OCR models), or pass --models DIR",
                need.display()
            ));
        }
    }
    run(
        Command::new(&python)
            .arg(root.join("web").join("bench").join("make_models.py"))
            .arg(scratch)
            .arg(&ppocr)
            .arg(&fixtures)
            .current_dir(root),
        "web/bench/make_models.py",
    )?;
    Ok(scratch.to_path_buf())
}

/// Builds (unless given) and packs the bundle; returns its folder.
fn pack(o: &Options) -> Result<PathBuf, String> {
    let root = crate::bench_web::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let out = o.out.clone().unwrap_or_else(|| target.join("gpu-bundle"));
    let profile = if o.debug { "debug" } else { "release" };
    let pixelgrad = match &o.pixelgrad_bin {
        Some(p) => p.clone(),
        None => {
            eprintln!("xtask gpu-bundle: building pixelgrad-cli ({profile})");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(["build", "-q", "-p", "pixelgrad-cli"]).current_dir(&root);
            if !o.debug {
                cmd.arg("--release");
            }
            run(&mut cmd, "cargo build -p pixelgrad-cli")?;
            target.join(profile).join("pixelgrad")
        }
    };
    let burn = match (&o.burn_bin, o.burn) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => None,
        (None, true) => {
            // Its own workspace (Burn from crates.io): its own target folder, as bench-burn uses.
            let dir = root.join("bench").join("burn-side");
            eprintln!("xtask gpu-bundle: building bench/burn-side ({profile}; the first build fetches Burn from crates.io)");
            let mut cmd = Command::new(env!("CARGO"));
            cmd.args(["build", "-q", "--target-dir", "target"]).current_dir(&dir);
            if !o.debug {
                cmd.arg("--release");
            }
            run(&mut cmd, "cargo build in bench/burn-side")?;
            Some(dir.join("target").join(profile).join("burn-side"))
        }
    };
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(io(&out))?;
    }
    let models_out = out.join("models");
    std::fs::create_dir_all(&models_out).map_err(io(&models_out))?;
    let scratch = out.join(".make-models");
    let src = make_models(&root, o.models.as_deref(), &scratch)?;
    let manifest = src.join("models.json");
    let rows = model_rows(&std::fs::read_to_string(&manifest).map_err(io(&manifest))?)?;
    for r in &rows {
        let to = models_out.join(&r.file);
        if !to.exists() {
            std::fs::copy(src.join(&r.file), &to).map_err(io(&src.join(&r.file)))?;
        }
        let npy = models_out.join(&r.npy);
        if npy.exists() {
            continue;
        }
        let n: usize = r.shape.iter().product();
        let data = match &r.input_file {
            Some(f) => {
                let bytes = std::fs::read(src.join(f)).map_err(io(&src.join(f)))?;
                if bytes.len() != n * 4 {
                    return Err(format!("{f}: {} bytes, but shape {:?} needs {}", bytes.len(), r.shape, n * 4));
                }
                bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            }
            None => page_input(n),
        };
        std::fs::write(&npy, npy_f32(&r.shape, &data)).map_err(io(&npy))?;
    }
    std::fs::write(models_out.join("models.tsv"), tsv(&rows)).map_err(io(&models_out))?;
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(io(&scratch))?;
    }
    copy_binary(&pixelgrad, &out.join("pixelgrad"))?;
    if let Some(b) = &burn {
        copy_binary(b, &out.join("burn-side"))?;
    }
    let script = root.join("scripts").join("gpu-bench.sh");
    std::fs::copy(&script, out.join("gpu-bench.sh")).map_err(io(&script))?;
    let commit = text_of(Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(&root)).unwrap_or_else(|| "unknown".into());
    let dirty = text_of(Command::new("git").args(["status", "--porcelain", "--untracked-files=no"]).current_dir(&root))
        .is_some_and(|s| !s.is_empty());
    let date = text_of(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"])).unwrap_or_else(|| "unknown".into());
    let info = format!(
        "commit {commit}{}\npacked {date}\nprofile {profile}{}\nburn-side {}\n",
        if dirty { " (with uncommitted changes)" } else { "" },
        if o.debug { " (debug builds: for testing the script, never for numbers)" } else { "" },
        if burn.is_some() { "included" } else { "left out" }
    );
    std::fs::write(out.join("BUNDLE.txt"), info).map_err(io(&out))?;
    let table = check_total(&sizes(&out)?, LIMIT_BYTES)?;
    eprint!("{table}");
    Ok(out)
}

/// Entry point of `cargo xtask gpu-bundle`; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    match parse(args).and_then(|o| pack(&o)) {
        Ok(out) => {
            println!("xtask gpu-bundle: {} (carry it to the GPU machine, then run: bash {}/gpu-bench.sh)", out.display(), out.display());
            0
        }
        Err(e) => {
            eprintln!("xtask gpu-bundle: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODELS_JSON: &str = r#"[
      {"name": "mobilenet-v1-0.5-128", "file": "m.onnx", "input": "input", "shape": [1, 3, 4, 4]},
      {"name": "ppocr-cls", "file": "c.onnx", "input": "x", "shape": [1, 3, 2, 2], "inputFile": "ppocr_cls.input.f32"},
      {"name": "mobilenet-v1-0.5-128 f16", "file": "m.onnx", "input": "input", "shape": [1, 3, 4, 4], "ortFile": "m_fp16.onnx", "precision": "f16", "form": "f16"},
      {"name": "mobilenet-v1-0.5-128 int8", "file": "m_int8.onnx", "input": "input", "shape": [1, 3, 4, 4], "form": "int8"},
      {"name": "ppocr-cls int8", "file": "c_int8.onnx", "input": "x", "shape": [1, 3, 2, 2], "inputFile": "ppocr_cls.input.f32", "form": "int8"}
    ]"#;

    #[test]
    fn models_json_becomes_one_tsv_row_per_benchmark_model() {
        let rows = model_rows(MODELS_JSON).unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["mobilenet-v1-0.5-128", "ppocr-cls", "mobilenet-v1-0.5-128-f16", "mobilenet-v1-0.5-128-int8", "ppocr-cls-int8"]);
        // --quick: every float model and the first of each reduced form
        let quick: Vec<bool> = rows.iter().map(|r| r.quick).collect();
        assert_eq!(quick, [true, true, true, true, false]);
        // the f16 row runs the float file with f16 storage, never ONNX Runtime's fp16 copy
        assert_eq!((rows[2].file.as_str(), rows[2].precision.as_str()), ("m.onnx", "f16"));
        assert_eq!(rows[3].precision, "auto");
        assert_eq!(rows[1].npy, "ppocr_cls.input.npy");
        assert_eq!(rows[0].npy, "page-input-1x3x4x4.npy");
        let t = tsv(&rows);
        assert_eq!(t.lines().nth(3), Some("mobilenet-v1-0.5-128-f16\tm.onnx\tinput\tpage-input-1x3x4x4.npy\tf16\tquick"));
        assert!(t.ends_with("ppocr-cls-int8\tc_int8.onnx\tx\tppocr_cls.input.npy\tauto\tfull\n"), "{t}");
        assert!(model_rows(r#"[{"name": "x", "file": "x.onnx", "input": "i"}]"#).unwrap_err().contains("shape"));
    }

    #[test]
    fn npy_header_is_padded_to_64_bytes_and_data_follows() {
        let b = npy_f32(&[1, 3, 2, 2], &[0.5; 12]);
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&b[10..10 + hlen]).unwrap();
        assert!(header.contains("'shape': (1, 3, 2, 2)") && header.ends_with('\n'), "{header}");
        assert_eq!(b.len(), 10 + hlen + 48);
        assert_eq!(&b[10 + hlen..10 + hlen + 4], &0.5f32.to_le_bytes());
        assert!(std::str::from_utf8(&npy_f32(&[5], &[0.0; 5])[10..]).unwrap().contains("(5,)"));
    }

    #[test]
    fn page_input_matches_the_browser_formula() {
        // numpy on make_models.py's bench_input formula gives these float32 values
        let want = [0.0f32, 0.921_690_4, 0.057_218_168, 0.558_222_6];
        let got = page_input(4);
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} against numpy's {want:?}");
        }
    }

    #[test]
    fn size_check_lists_every_file_and_refuses_over_the_limit() {
        let files = vec![("pixelgrad".to_string(), 40 << 20), ("models/m.onnx".to_string(), 30 << 20)];
        let e = check_total(&files, LIMIT_BYTES).unwrap_err();
        assert!(e.contains("70.00 MiB") && e.contains("pixelgrad") && e.contains("models/m.onnx"), "{e}");
        let ok = check_total(&files[..1], LIMIT_BYTES).unwrap();
        assert!(ok.contains("40.00 MiB  total"), "{ok}");
    }

    fn script() -> PathBuf {
        crate::bench_web::workspace_root().join("scripts").join("gpu-bench.sh")
    }

    fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
        let text = String::from_utf8_lossy(stdout);
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}\n{text}"))).collect()
    }

    #[test]
    fn the_peak_table_knows_the_datacenter_cards_and_says_when_it_does_not() {
        for (adapter, want) in [
            ("NVIDIA H100 80GB HBM3", Some(67000.0)),
            ("NVIDIA H100 PCIe", Some(51000.0)),
            ("NVIDIA H200", Some(67000.0)),
            ("NVIDIA A100-SXM4-80GB", Some(19500.0)),
            ("NVIDIA L4", Some(30300.0)),
            ("NVIDIA L40S", Some(91600.0)),
            ("NVIDIA A10", Some(31200.0)),
            ("NVIDIA GeForce RTX 4090", Some(82600.0)),
            ("llvmpipe (LLVM 15.0.6, 256 bits)", None),
        ] {
            let out =
                Command::new("bash").arg(script()).args(["--peak", adapter]).env_remove("PIXELGRAD_PEAK_FP32_GFLOPS").output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let j = &json_lines(&out.stdout)[0];
            assert_eq!(j["adapter"], adapter);
            assert_eq!(j["peak_fp32_gflops"].as_f64(), want, "{adapter}: {j}");
            let source = j["peak_source"].as_str().unwrap();
            assert!(
                if want.is_some() { source.contains("datasheet") || source.contains("whitepaper") } else { source.starts_with("unknown") },
                "{j}"
            );
        }
    }

    /// The whole path on this machine: pack a bundle from the debug CLI (a debug bundle; the
    /// release builds are too slow for CI) and a stand-in for burn-side that prints Burn's line
    /// format, then run the bundle's copy of the script with `--quick` on lavapipe.
    ///
    /// Ignored in the workspace test run: it builds the CLI with a nested cargo (which waits on
    /// the build lock of a running `cargo test`), and with a cold Mesa shader cache lavapipe
    /// took 920 s for it (76 s warm). Run it alone:
    /// `cargo test -p xtask --bin xtask quick_run_on_lavapipe -- --ignored`.
    #[test]
    #[ignore = "slow on a cold lavapipe shader cache; run alone with --ignored"]
    fn quick_run_on_lavapipe_prints_every_figure() {
        let root = crate::bench_web::workspace_root();
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
        // a no-op after the workspace test build, which links the CLI for its own tests
        run(Command::new(env!("CARGO")).args(["build", "-q", "-p", "pixelgrad-cli"]).current_dir(&root), "cargo build -p pixelgrad-cli")
            .unwrap();
        let dir = std::env::temp_dir().join(format!("pixelgrad-gpu-bundle-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stub = dir.join("burn-side-stub");
        std::fs::write(
            &stub,
            "#!/bin/sh\n# stands in for burn-side: refuses calls without the script's flags\n\
             case \"$*\" in *'--device cpu'*'--only seed-mlp,mnist-mlp,cnn'*) ;; *) echo \"bad args: $*\" >&2; exit 3 ;; esac\n\
             echo 'burn device Stub'\nfor w in seed-mlp mnist-mlp cnn; do echo \"burn $w 2.00 steps/s\"; done\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bundle = dir.join("bundle");
        let o = Options {
            out: Some(bundle.clone()),
            debug: true,
            burn: true,
            pixelgrad_bin: Some(target.join("debug").join("pixelgrad")),
            burn_bin: Some(stub),
            models: None,
        };
        pack(&o).unwrap();
        let rows = model_rows_of(&bundle);
        let out = Command::new("bash").arg(bundle.join("gpu-bench.sh")).arg("--quick").output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        // the script's progress lines carry elapsed seconds: where the time went, in the log
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        let lines = json_lines(&out.stdout);
        assert!(
            out.status.success(),
            "exit {}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let figure = |f: &str| lines.iter().find(|l| l["figure"] == f).unwrap_or_else(|| panic!("no {f} line in {lines:?}"));
        let mut want =
            vec!["setup".to_string(), "matmul-1024".into(), "train-seed-mlp".into(), "train-mnist-mlp".into(), "train-cnn".into()];
        want.extend(rows.iter().map(|id| format!("infer-{id}")));
        let got: Vec<String> = lines.iter().map(|l| l["figure"].as_str().unwrap_or("").to_string()).collect();
        assert_eq!(got, want);
        assert!(figure("setup")["bundle"].as_str().unwrap().contains("profile debug"));
        let m = figure("matmul-1024");
        assert!(m["gflops"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["adapter"].as_str().is_some_and(|a| !a.is_empty() && !a.starts_with("webgpu")), "{m}");
        // lavapipe is in no datasheet: the line says so instead of inventing a peak
        assert!(m["peak_fp32_gflops"].is_null() && m["fraction_of_peak"].is_null(), "{m}");
        for w in ["seed-mlp", "mnist-mlp", "cnn"] {
            let t = figure(&format!("train-{w}"));
            let p = t["pixelgrad"].as_f64().unwrap();
            assert!(p > 0.0, "{t}");
            assert_eq!(t["burn"].as_f64(), Some(2.0), "{t}");
            assert!((t["ratio"].as_f64().unwrap() - p / 2.0).abs() <= 1e-3 * p, "{t}");
            assert_eq!(t["burn_device"], "Stub");
        }
        for id in &rows {
            let i = figure(&format!("infer-{id}"));
            assert!(i["median_ms"].as_f64().unwrap() > 0.0 && i["runs"] == 3, "{i}");
        }
        // the f16 rows ran with f16 weight storage
        assert!(lines.iter().filter(|l| l["precision"] == "f16").all(|l| l["weight_storage"] == "f16"), "{lines:?}");
    }

    fn model_rows_of(bundle: &Path) -> Vec<String> {
        let tsv = std::fs::read_to_string(bundle.join("models").join("models.tsv")).unwrap();
        // the rows --quick runs
        let ids: Vec<String> = tsv
            .lines()
            .filter(|l| !l.starts_with('#') && l.ends_with("\tquick"))
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
        assert!(ids.len() >= 3, "{tsv}");
        ids
    }

    #[test]
    fn options_refuse_contradictions_and_unknown_flags() {
        assert!(parse(&["--no-burn".into(), "--burn-bin".into(), "b".into()]).is_err());
        assert!(parse(&["--fast".into()]).is_err());
        assert!(parse(&["--out".into()]).is_err());
        let o = parse(&["--debug".into(), "--no-burn".into()]).unwrap();
        assert!(o.debug && !o.burn);
    }
}
