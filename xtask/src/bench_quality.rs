//! `cargo xtask bench-quality [--workloads W,...] [--backends cpu,webgpu,webgl] [--debug-cli]
//! [--mnist DIR] [--out FILE]`: model quality, the test accuracy each workload reaches on each
//! backend. Every (workload, backend) is one `pixelgrad train --json` with the CLI's defaults for
//! that model and data set and the same seed, so the backends train the same network from the
//! same weights on the same batches; the rows differ only by each backend's arithmetic. Writes
//! `web/bench/results/quality-<date>.json` (with the date, commit and machine) and regenerates
//! `docs/benchmarks.md` (`bench-report`).
//!
//! Workloads: `digits-seed-mlp`, `digits-mlp`, `digits-mlp-mixed` (mixed precision),
//! `digits-cnn` (the default set: the embedded 8x8 digits, seconds per run natively) and
//! `mnist-mlp`, `mnist-cnn` (MNIST IDX files from `--mnist DIR`, default `../shared/data/mnist`;
//! minutes per run on a software GPU).

use std::path::{Path, PathBuf};
use std::process::Command;

struct Workload {
    name: &'static str,
    about: &'static str,
    args: &'static [&'static str],
    mnist: bool,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "digits-seed-mlp",
        about: "48-64-2 sigmoid MLP, MSE, SGD, batch 1, 10 epochs; the digits' binary task",
        args: &["--model", "seed-mlp"],
        mnist: false,
    },
    Workload { name: "digits-mlp", about: "64-256-10 MLP, Adam, batch 32, 30 epochs; 8x8 digits", args: &["--model", "mlp"], mnist: false },
    Workload {
        name: "digits-mlp-mixed",
        about: "digits-mlp in mixed precision (f16 activations and gradients, f32 master weights)",
        args: &["--model", "mlp", "--precision", "mixed"],
        mnist: false,
    },
    Workload {
        name: "digits-cnn",
        about: "conv16-pool-conv32-pool-dense, Adam, batch 32, 20 epochs; 8x8 digits",
        args: &["--model", "cnn"],
        mnist: false,
    },
    Workload { name: "mnist-mlp", about: "784-256-10 MLP, Adam, batch 32, 2 epochs; MNIST", args: &["--model", "mlp"], mnist: true },
    Workload {
        name: "mnist-cnn",
        about: "conv16-pool-conv32-pool-dense, Adam, batch 32, 1 epoch; MNIST",
        args: &["--model", "cnn"],
        mnist: true,
    },
];

const DEFAULT_WORKLOADS: &str = "digits-seed-mlp,digits-mlp,digits-mlp-mixed,digits-cnn";

struct Options {
    workloads: Vec<&'static Workload>,
    backends: Vec<String>,
    debug_cli: bool,
    mnist: PathBuf,
    out: Option<PathBuf>,
}

fn parse(args: &[String], root: &Path) -> Result<Options, String> {
    let mut o = Options {
        workloads: Vec::new(),
        backends: vec!["cpu".into(), "webgpu".into(), "webgl".into()],
        debug_cli: false,
        mnist: root.join("..").join("shared").join("data").join("mnist"),
        out: None,
    };
    let mut names = DEFAULT_WORKLOADS.to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--workloads" => names = value()?,
            "--backends" => o.backends = value()?.split(',').map(str::to_string).collect(),
            "--mnist" => o.mnist = PathBuf::from(value()?),
            "--out" => o.out = Some(PathBuf::from(value()?)),
            "--debug-cli" => o.debug_cli = true,
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    for n in names.split(',') {
        let w = WORKLOADS
            .iter()
            .find(|w| w.name == n)
            .ok_or_else(|| format!("unknown workload '{n}' ({})", WORKLOADS.iter().map(|w| w.name).collect::<Vec<_>>().join(", ")))?;
        o.workloads.push(w);
    }
    if let Some(b) = o.backends.iter().find(|b| !["cpu", "webgpu", "webgl"].contains(&b.as_str())) {
        return Err(format!("unknown backend '{b}' (cpu, webgpu, webgl)"));
    }
    Ok(o)
}

/// Runs the benchmark; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default();
    let o = match parse(args, &root) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("xtask bench-quality: {e}\nusage: cargo xtask bench-quality [--workloads W,...] [--backends cpu,webgpu,webgl] [--debug-cli] [--mnist DIR] [--out FILE]");
            return 2;
        }
    };
    match run(&o, &root) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask bench-quality: {e}");
            1
        }
    }
}

fn run(o: &Options, root: &Path) -> Result<(), String> {
    let mut build = Command::new(env!("CARGO"));
    build.current_dir(root).args(["build", "-p", "pixelgrad-cli"]);
    if !o.debug_cli {
        build.arg("--release");
    }
    if !build.status().map_err(|e| format!("cargo build: {e}"))?.success() {
        return Err("cargo build -p pixelgrad-cli failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let cli = target.join(if o.debug_cli { "debug" } else { "release" }).join("pixelgrad");
    let date = crate::machine::utc_now()?;
    let machine = crate::machine::record(root);

    let mut rows = Vec::new();
    let mut devices = std::collections::BTreeMap::new();
    for w in &o.workloads {
        let dataset = if w.mnist {
            if !o.mnist.is_dir() {
                for b in &o.backends {
                    rows.push(serde_json::json!({ "workload": w.name, "backend": b, "error": format!("no MNIST files in {}", o.mnist.display()) }));
                }
                continue;
            }
            format!("idx:{}", o.mnist.display())
        } else {
            "digits".to_string()
        };
        for b in &o.backends {
            let out_dir = target.join("bench-quality").join(format!("{}-{b}", w.name));
            // Recorded with the row: crates/pixelgrad-cli/tests/quality.rs replays the digits rows.
            let argv: Vec<&str> = ["train", "--json", "--seed", "42", "--backend", b.as_str(), "--dataset", dataset.as_str()]
                .into_iter()
                .chain(w.args.iter().copied())
                .collect();
            let mut cmd = Command::new(&cli);
            cmd.current_dir(root).args(&argv).arg("--out").arg(&out_dir);
            eprintln!("xtask bench-quality: {} on {b}", w.name);
            let res = cmd.output().map_err(|e| format!("could not run {}: {e}", cli.display()))?;
            let stdout = String::from_utf8_lossy(&res.stdout);
            let parsed = stdout.lines().last().and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
            match parsed.filter(|_| res.status.success()) {
                Some(j) => {
                    if let Some(name) = j["backend_name"].as_str() {
                        devices.insert(b.clone(), name.to_string());
                    }
                    eprintln!("  test accuracy {}, {} s", j["test_accuracy"], j["train_seconds"]);
                    rows.push(serde_json::json!({
                        "workload": w.name,
                        "backend": b,
                        "args": argv,
                        "testAccuracy": j["test_accuracy"],
                        "testLoss": j["test_loss"],
                        "trainLoss": j["train_loss"],
                        "epochs": j["epochs"],
                        "steps": j["steps"],
                        "seconds": j["train_seconds"],
                        "precision": j["precision"],
                        "precisionFallback": j["precision_fallback"],
                    }));
                }
                None => {
                    let err = String::from_utf8_lossy(&res.stderr).lines().rfind(|l| !l.trim().is_empty()).unwrap_or("failed").to_string();
                    eprintln!("  {err}");
                    rows.push(serde_json::json!({ "workload": w.name, "backend": b, "error": err }));
                }
            }
        }
    }
    let result = serde_json::json!({
        "date": date,
        "machine": machine,
        "about": format!(
            "`pixelgrad train --json --seed 42` per workload and backend ({} build of the CLI), each with the CLI's defaults for its model and data set; test accuracy on the held-out split, its loss and the training time.",
            if o.debug_cli { "debug" } else { "release" }
        ),
        "backends": o.backends.iter().map(|b| serde_json::json!({ "name": b, "device": devices.get(b) })).collect::<Vec<_>>(),
        "workloads": o.workloads.iter().map(|w| serde_json::json!({ "name": w.name, "about": w.about })).collect::<Vec<_>>(),
        "rows": rows,
    });
    let stamp = date[..19].replace(':', "-");
    let out = o.out.clone().unwrap_or_else(|| root.join("web").join("bench").join("results").join(format!("quality-{stamp}.json")));
    crate::bench_report::write_result("bench-quality", &out, &result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_name_known_workloads_and_backends() {
        let root = Path::new("/repo");
        let o = parse(&[], root).unwrap();
        assert_eq!(o.workloads.iter().map(|w| w.name).collect::<Vec<_>>().join(","), DEFAULT_WORKLOADS);
        assert_eq!(o.backends, ["cpu", "webgpu", "webgl"]);
        let o = parse(&["--workloads".into(), "mnist-mlp".into(), "--backends".into(), "cpu".into()], root).unwrap();
        assert!(o.workloads[0].mnist);
        assert!(parse(&["--workloads".into(), "imagenet".into()], root).err().unwrap().contains("unknown workload 'imagenet'"));
        assert!(parse(&["--backends".into(), "tpu".into()], root).err().unwrap().contains("unknown backend 'tpu'"));
        assert!(parse(&["--out".into()], root).err().unwrap().contains("needs a value"));
    }
}
