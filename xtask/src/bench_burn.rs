//! `cargo xtask bench-burn`: pixelgrad's WebGPU backend against Burn 0.22's wgpu backend on the
//! same adapter, in one run. A benchmark, not a test (not part of CI).
//!
//! Builds `pixelgrad-cli` and the standalone harness `bench/burn-side/` (its own workspace, Burn
//! from crates.io) in release, then runs `pixelgrad bench --backends webgpu` on the browser
//! benchmark's workloads (seed-mlp, mnist-mlp, cnn, matmul 1024³) and `burn-side` alternately,
//! `--rounds` times (pixelgrad first in even rounds, Burn first in odd ones), and prints every
//! round, the medians and the ratios pixelgrad / Burn. The machines this runs on are shared and
//! noisy, so the load average is printed too; read the medians.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::side_by_side::{fmt, load_average, median, output};

const USAGE: &str = "usage: cargo xtask bench-burn [--rounds N] [--seconds S] [--no-build] [--json-out FILE]";

/// The compared workloads: (name in both tools, unit).
const WORKLOADS: [(&str, &str); 4] = [("seed-mlp", "steps/s"), ("mnist-mlp", "steps/s"), ("cnn", "steps/s"), ("matmul-1024", "GFLOP/s")];

struct Options {
    rounds: usize,
    seconds: f64,
    build: bool,
    json_out: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options { rounds: 3, seconds: 2.0, build: true, json_out: None };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--rounds" => o.rounds = value()?.parse().map_err(|_| format!("--rounds: not a count\n{USAGE}"))?,
            "--seconds" => o.seconds = value()?.parse().map_err(|_| format!("--seconds: not a number\n{USAGE}"))?,
            "--json-out" => o.json_out = Some(PathBuf::from(value()?)),
            "--no-build" => o.build = false,
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    if o.rounds == 0 {
        return Err(format!("--rounds must be at least 1\n{USAGE}"));
    }
    Ok(o)
}

/// One pixelgrad round: workload name → value, from the `--json-out` file.
fn pixelgrad_round(bin: &Path, seconds: f64, json: &Path) -> Result<BTreeMap<String, f64>, String> {
    output(
        Command::new(bin)
            .args([
                "bench",
                "--backends",
                "webgpu",
                "--workloads",
                "seed-mlp,mnist-mlp,cnn,matmul",
                "--matmul",
                "1024",
                "--no-passes",
                "--seconds",
            ])
            .arg(seconds.to_string())
            .arg("--json-out")
            .arg(json),
        "pixelgrad bench",
    )?;
    let text = std::fs::read_to_string(json).map_err(|e| format!("{}: {e}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let mut out = BTreeMap::new();
    for row in v["rows"].as_array().into_iter().flatten() {
        if let (Some(name), Some(x)) = (row["name"].as_str(), row["values"]["webgpu"].as_f64()) {
            out.insert(name.to_string(), x);
        }
    }
    Ok(out)
}

/// One Burn round: lines `burn <workload> <value> <unit>`.
fn burn_round(bin: &Path, seconds: f64) -> Result<(BTreeMap<String, f64>, String), String> {
    let text = output(
        Command::new(bin).args(["--only", "seed-mlp,mnist-mlp,cnn,matmul-1024", "--seconds"]).arg(seconds.to_string()),
        "burn-side",
    )?;
    let mut out = BTreeMap::new();
    let mut device = String::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["burn", "device", rest @ ..] => device = rest.join(" "),
            ["burn", name, value, _unit] => {
                if let Ok(x) = value.parse() {
                    out.insert(name.to_string(), x);
                }
            }
            _ => {}
        }
    }
    Ok((out, device))
}

fn try_main(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let root = crate::bench_web::workspace_root();
    let burn_dir = root.join("bench").join("burn-side");
    if o.build {
        println!("xtask bench-burn: building pixelgrad-cli and bench/burn-side (release)");
        output(
            Command::new(env!("CARGO")).args(["build", "--release", "-q", "-p", "pixelgrad-cli"]).current_dir(&root),
            "cargo build -p pixelgrad-cli",
        )?;
        output(Command::new(env!("CARGO")).args(["build", "--release", "-q"]).current_dir(&burn_dir), "cargo build in bench/burn-side")?;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let pixelgrad = target.join("release").join("pixelgrad");
    let burn = burn_dir.join("target").join("release").join("burn-side");
    let json = std::env::temp_dir().join(format!("pixelgrad-bench-burn-{}.json", std::process::id()));
    println!("xtask bench-burn: {} rounds of {} s per measurement; load average at start {}", o.rounds, o.seconds, load_average());
    let mut ours: Vec<BTreeMap<String, f64>> = Vec::new();
    let mut theirs: Vec<BTreeMap<String, f64>> = Vec::new();
    let mut device = String::new();
    for round in 0..o.rounds {
        let mut p = None;
        let mut b = None;
        // Alternate who goes first, so a load change during a round hits both sides.
        for side in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            if side == 0 {
                p = Some(pixelgrad_round(&pixelgrad, o.seconds, &json)?);
            } else {
                let (r, d) = burn_round(&burn, o.seconds)?;
                device = d;
                b = Some(r);
            }
        }
        let (p, b) = (p.unwrap_or_default(), b.unwrap_or_default());
        let cells: Vec<String> =
            WORKLOADS.iter().map(|(w, _)| format!("{w} {} / {}", fmt(p.get(*w).copied()), fmt(b.get(*w).copied()))).collect();
        println!("round {} (pixelgrad / burn; load {}): {}", round + 1, load_average(), cells.join(", "));
        ours.push(p);
        theirs.push(b);
    }
    let _ = std::fs::remove_file(&json);
    println!("\nBurn device: {device}");
    println!("| workload | pixelgrad webgpu | Burn wgpu | pixelgrad / Burn |");
    println!("| --- | --- | --- | --- |");
    let mut summary = Vec::new();
    for (w, unit) in WORKLOADS {
        let get = |rs: &[BTreeMap<String, f64>]| -> Vec<f64> { rs.iter().filter_map(|r| r.get(w).copied()).collect() };
        let (pv, bv) = (get(&ours), get(&theirs));
        let (pm, bm) = (median(&pv), median(&bv));
        let ratio = match (pm, bm) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        println!("| {w} ({unit}, median of {}) | {} | {} | {}x |", pv.len().min(bv.len()), fmt(pm), fmt(bm), fmt(ratio));
        summary.push(serde_json::json!({"workload": w, "unit": unit, "pixelgrad": pv, "burn": bv, "pixelgrad_median": pm, "burn_median": bm, "ratio": ratio}));
    }
    println!("load average at end: {}", load_average());
    if let Some(path) = &o.json_out {
        let j = serde_json::json!({"rounds": o.rounds, "seconds": o.seconds, "burn_device": device, "workloads": summary});
        std::fs::write(path, j.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Entry point of `cargo xtask bench-burn`; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    match try_main(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask bench-burn: {e}");
            1
        }
    }
}
