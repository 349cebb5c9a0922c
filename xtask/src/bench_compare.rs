//! `cargo xtask bench-compare --base REV`: the whole engine before and after a change, both
//! builds measured in one run. A benchmark, not a test (not part of CI).
//!
//! A refactoring is "no slower" only if the old and the new build are measured side by side on
//! the same machine in the same minutes: the development machines are shared and noisy, and a
//! number from yesterday's run says little. This command checks `REV` out into
//! `target/compare/src` (a detached git worktree, reused between runs), builds its release CLI
//! into `target/compare/target`, builds this checkout's, and then alternates the two:
//!
//! - **native**: `pixelgrad bench` (matmul GFLOP/s and training steps/s per backend), `--rounds`
//!   times, the old build first in even rounds and the new one first in odd ones; passes per
//!   replayed training step are counted once per build (they are deterministic);
//! - **browser training** (`--browser`): each checkout's own `cargo xtask bench --no-native`
//!   (pixelgrad against TensorFlow.js in headless Chromium);
//! - **inference** (`--inference`): each checkout's own `cargo xtask bench --inference`
//!   (pixelgrad against ONNX Runtime Web).
//!
//! The browser parts run `--browser-rounds` times (default 2), alternating who goes first like
//! the native rounds: one old-then-new pass read as before/after is at the mercy of whatever
//! else the machine did in those minutes. Each side's wasm package is built in its first round
//! only. `--only`, `--pairs` and `--quick` are handed to both checkouts' `cargo xtask bench`
//! unchanged, to re-measure a few workloads or models quickly.
//!
//! It prints one table per part: the old and new medians and new / old, where higher is better
//! for rates and lower for latencies (the unit column says which). In the browser parts the
//! other library's rows, which neither build changes, show the run-to-run noise: a pixelgrad
//! ratio inside their spread means nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::side_by_side::{fmt, load_average, median, output};

const USAGE: &str = "usage: cargo xtask bench-compare --base REV [--rounds N] [--seconds S] [--backends cpu,webgpu,webgl] [--browser] [--inference] [--browser-rounds N] [--only LIST] [--pairs LIST] [--quick] [--only-browser] [--no-build] [--json-out FILE]";

#[derive(Debug)]
struct Options {
    base: String,
    rounds: usize,
    browser_rounds: usize,
    seconds: f64,
    backends: String,
    native: bool,
    browser: bool,
    inference: bool,
    build: bool,
    json_out: Option<PathBuf>,
    /// `--only` / `--pairs` with their values, handed to both checkouts' browser benches.
    passthrough: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        base: String::new(),
        rounds: 3,
        browser_rounds: 2,
        seconds: 2.0,
        backends: "cpu,webgpu,webgl".into(),
        native: true,
        browser: false,
        inference: false,
        build: true,
        json_out: None,
        passthrough: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--base" => o.base = value()?.clone(),
            "--rounds" => o.rounds = value()?.parse().map_err(|_| format!("--rounds: not a count\n{USAGE}"))?,
            "--browser-rounds" => o.browser_rounds = value()?.parse().map_err(|_| format!("--browser-rounds: not a count\n{USAGE}"))?,
            "--only" | "--pairs" => {
                let v = value()?.clone();
                o.passthrough.extend([a.clone(), v]);
            }
            "--quick" => o.passthrough.push(a.clone()),
            "--seconds" => o.seconds = value()?.parse().map_err(|_| format!("--seconds: not a number\n{USAGE}"))?,
            "--backends" => o.backends = value()?.clone(),
            "--browser" => o.browser = true,
            "--inference" => o.inference = true,
            "--only-browser" => o.native = false,
            "--no-build" => o.build = false,
            "--json-out" => o.json_out = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    if o.base.is_empty() {
        return Err(format!("--base REV is required\n{USAGE}"));
    }
    if o.rounds == 0 || o.browser_rounds == 0 {
        return Err(format!("--rounds and --browser-rounds must be at least 1\n{USAGE}"));
    }
    if !o.native && !o.browser && !o.inference {
        return Err(format!("--only-browser needs --browser or --inference\n{USAGE}"));
    }
    Ok(o)
}

/// The two builds: the base checkout and its target directory, and this checkout's.
struct Sides {
    old_src: PathBuf,
    old_target: PathBuf,
    new_src: PathBuf,
    new_target: PathBuf,
    old_rev: String,
    new_rev: String,
}

impl Sides {
    fn src(&self, old: bool) -> &Path {
        if old {
            &self.old_src
        } else {
            &self.new_src
        }
    }
    fn target(&self, old: bool) -> &Path {
        if old {
            &self.old_target
        } else {
            &self.new_target
        }
    }
    fn cli(&self, old: bool) -> PathBuf {
        self.target(old).join("release").join("pixelgrad")
    }
}

fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    Ok(output(Command::new("git").args(args).current_dir(root), &format!("git {}", args.join(" ")))?.trim().to_string())
}

/// Checks `rev` out into `target/compare/src` (created once as a detached worktree).
fn prepare(root: &Path, rev: &str) -> Result<Sides, String> {
    let old_rev = git(root, &["rev-parse", "--short", &format!("{rev}^{{commit}}")])?;
    let new_rev = git(root, &["rev-parse", "--short", "HEAD"])?;
    let dir = root.join("target").join("compare");
    let old_src = dir.join("src");
    if old_src.join(".git").exists() {
        git(&old_src, &["checkout", "-q", "--detach", &old_rev])?;
    } else {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = old_src.to_string_lossy().into_owned();
        git(root, &["worktree", "add", "-q", "--detach", &path, &old_rev])?;
    }
    let new_target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    Ok(Sides { old_src, old_target: dir.join("target"), new_src: root.to_path_buf(), new_target, old_rev, new_rev })
}

fn build(s: &Sides) -> Result<(), String> {
    for old in [true, false] {
        println!("xtask bench-compare: building the {} CLI (release)", if old { "old" } else { "new" });
        output(
            Command::new(env!("CARGO"))
                .args(["build", "--release", "-q", "-p", "pixelgrad-cli"])
                .env("CARGO_TARGET_DIR", s.target(old))
                .current_dir(s.src(old)),
            "cargo build --release -p pixelgrad-cli",
        )?;
    }
    Ok(())
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A measured figure: its key (what was measured, on which backend) and whether higher is
/// better.
type Figures = BTreeMap<(String, String), f64>;

/// One native round: `(row, backend)` → value, and the passes per step when counted.
fn native_round(bin: &Path, o: &Options, passes: bool, json: &Path) -> Result<(Figures, Figures), String> {
    let mut cmd = Command::new(bin);
    cmd.args(["bench", "--backends", &o.backends, "--seconds", &o.seconds.to_string(), "--json-out"]).arg(json);
    if !passes {
        cmd.arg("--no-passes");
    }
    output(&mut cmd, "pixelgrad bench")?;
    let v = read_json(json)?;
    let mut rates = Figures::new();
    for row in v["rows"].as_array().into_iter().flatten() {
        let name = row["name"].as_str().unwrap_or("?").to_string();
        for (backend, x) in row["values"].as_object().into_iter().flatten() {
            if let Some(x) = x.as_f64() {
                rates.insert((name.clone(), backend.clone()), x);
            }
        }
    }
    let mut counts = Figures::new();
    for row in v["passes_per_step"].as_array().into_iter().flatten() {
        let name = format!("{} {}", row["workload"].as_str().unwrap_or("?"), row["optimizer"].as_str().unwrap_or("?"));
        for (backend, x) in row["values"].as_object().into_iter().flatten() {
            if let Some(x) = x.as_f64() {
                counts.insert((name.clone(), backend.clone()), x);
            }
        }
    }
    Ok((rates, counts))
}

/// One browser run of a checkout's own `cargo xtask bench`: `(workload, lib backend)` → value.
fn browser_round(s: &Sides, old: bool, inference: bool, build: bool, passthrough: &[String], json: &Path) -> Result<Figures, String> {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["run", "-q", "-p", "xtask", "--", "bench", "--no-markdown", "--out"]).arg(json);
    // `--pairs` names inference backends; the training bench has no such flag.
    let mut it = passthrough.iter();
    while let Some(flag) = it.next() {
        let value = if flag == "--quick" { None } else { it.next() };
        if inference || flag != "--pairs" {
            cmd.arg(flag).args(value);
        }
    }
    if inference {
        cmd.arg("--inference");
    } else {
        cmd.arg("--no-native");
    }
    if !build {
        cmd.arg("--no-build");
    }
    let side = if old { "old" } else { "new" };
    println!(
        "xtask bench-compare: {} bench of the {side} build (load {})",
        if inference { "inference" } else { "browser" },
        load_average()
    );
    output(cmd.env("CARGO_TARGET_DIR", s.target(old)).current_dir(s.src(old)), &format!("cargo xtask bench ({side} build)"))?;
    let v = read_json(json)?;
    let mut out = Figures::new();
    for run in v["runs"].as_array().into_iter().flatten() {
        let what = run["workload"].as_str().or(run["model"].as_str()).unwrap_or("?");
        let lib = format!("{} {}", run["lib"].as_str().unwrap_or("?"), run["backend"].as_str().unwrap_or("?"));
        let value = if inference { run["medianMs"].as_f64() } else { run["value"].as_f64() };
        if let Some(x) = value {
            out.insert((what.to_string(), lib), x);
        }
    }
    Ok(out)
}

/// Prints a table of old and new medians per figure, and returns it as JSON rows.
fn table(title: &str, unit: &str, old: &[Figures], new: &[Figures]) -> Vec<serde_json::Value> {
    let keys: std::collections::BTreeSet<&(String, String)> = old.iter().chain(new).flat_map(|r| r.keys()).collect();
    println!("\n{title}\n| figure | backend | old ({unit}) | new ({unit}) | new / old |\n| --- | --- | --- | --- | --- |");
    let mut rows = Vec::new();
    for key in keys {
        let get = |rs: &[Figures]| -> Vec<f64> { rs.iter().filter_map(|r| r.get(key).copied()).collect() };
        let (ov, nv) = (get(old), get(new));
        let (om, nm) = (median(&ov), median(&nv));
        let ratio = match (om, nm) {
            (Some(a), Some(b)) if a != 0.0 => Some(b / a),
            _ => None,
        };
        println!("| {} | {} | {} | {} | {} |", key.0, key.1, fmt(om), fmt(nm), fmt(ratio));
        rows.push(serde_json::json!({"figure": key.0, "backend": key.1, "old": ov, "new": nv, "old_median": om, "new_median": nm, "ratio": ratio}));
    }
    rows
}

fn try_main(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let root = crate::bench_web::workspace_root();
    let s = prepare(&root, &o.base)?;
    println!("xtask bench-compare: old {} ({}), new {} ({})", s.old_rev, s.old_src.display(), s.new_rev, s.new_src.display());
    if o.build && o.native {
        build(&s)?;
    }
    let json = std::env::temp_dir().join(format!("pixelgrad-bench-compare-{}.json", std::process::id()));
    let mut report = serde_json::json!({"old": s.old_rev, "new": s.new_rev, "load_at_start": load_average()});
    if o.native {
        println!("xtask bench-compare: {} native rounds of {} s per measurement; load {}", o.rounds, o.seconds, load_average());
        let (mut old, mut new) = (Vec::new(), Vec::new());
        let (mut old_passes, mut new_passes) = (Figures::new(), Figures::new());
        for round in 0..o.rounds {
            // Alternate who goes first, so a change of load during a round hits both builds.
            let order = if round % 2 == 0 { [true, false] } else { [false, true] };
            for is_old in order {
                let (rates, passes) = native_round(&s.cli(is_old), &o, round == 0, &json)?;
                if is_old {
                    old.push(rates);
                    old_passes.extend(passes);
                } else {
                    new.push(rates);
                    new_passes.extend(passes);
                }
            }
            println!("round {} done (load {})", round + 1, load_average());
        }
        let rates = table("native (`pixelgrad bench`; GFLOP/s or steps/s: higher is better)", "rate", &old, &new);
        let passes = table("passes per replayed training step (launches; fewer is better)", "passes", &[old_passes], &[new_passes]);
        report["native"] = serde_json::json!(rates);
        report["passes_per_step"] = serde_json::json!(passes);
    }
    for (on, inference, key, title, unit) in [
        (o.browser, false, "browser", "browser training (`cargo xtask bench`; steps/s: higher is better)", "steps/s"),
        (o.inference, true, "inference", "browser inference (`cargo xtask bench --inference`; median ms: lower is better)", "ms"),
    ] {
        if !on {
            continue;
        }
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for round in 0..o.browser_rounds {
            let order = if round % 2 == 0 { [true, false] } else { [false, true] };
            for is_old in order {
                let figures = browser_round(&s, is_old, inference, o.build && round == 0, &o.passthrough, &json)?;
                if is_old {
                    old.push(figures)
                } else {
                    new.push(figures)
                }
            }
            println!("{key} round {} done (load {})", round + 1, load_average());
        }
        report[key] = serde_json::json!(table(title, unit, &old, &new));
    }
    let _ = std::fs::remove_file(&json);
    println!("\nload average at end: {}", load_average());
    report["load_at_end"] = serde_json::json!(load_average());
    if let Some(path) = &o.json_out {
        std::fs::write(path, report.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Entry point of `cargo xtask bench-compare`; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    match try_main(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xtask bench-compare: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_base_is_required_and_the_parts_are_chosen_by_flags() {
        assert!(parse(&args("--rounds 2")).unwrap_err().contains("--base REV is required"));
        assert!(parse(&args("--base HEAD~1 --rounds 0")).unwrap_err().contains("at least 1"));
        assert!(parse(&args("--base HEAD~1 --only-browser")).unwrap_err().contains("needs --browser"));
        let o = parse(&args("--base da902a6 --browser --only-browser --seconds 1.5")).unwrap();
        assert_eq!((o.native, o.browser, o.inference, o.seconds), (false, true, false, 1.5));
        assert!(parse(&args("--base x --bogus")).unwrap_err().contains("unknown argument '--bogus'"));
        assert!(parse(&args("--base x --inference --browser-rounds 0")).unwrap_err().contains("at least 1"));
        let o = parse(&args("--base x --inference --browser-rounds 3 --only ppocr-cls --pairs webgl")).unwrap();
        assert_eq!(o.browser_rounds, 3);
        assert_eq!(o.passthrough, args("--only ppocr-cls --pairs webgl"));
        assert_eq!(parse(&args("--base x --browser --quick --only cnn")).unwrap().passthrough, args("--quick --only cnn"));
    }

    #[test]
    fn the_table_pairs_medians_per_figure_and_keeps_one_sided_rows() {
        let key = |a: &str, b: &str| (a.to_string(), b.to_string());
        let old = vec![Figures::from([(key("mlp", "cpu"), 10.0)]), Figures::from([(key("mlp", "cpu"), 12.0), (key("cnn", "cpu"), 3.0)])];
        let new = vec![Figures::from([(key("mlp", "cpu"), 22.0)]), Figures::from([(key("mlp", "cpu"), 22.0)])];
        let rows = table("t", "rate", &old, &new);
        let mlp = rows.iter().find(|r| r["figure"] == "mlp").unwrap();
        assert_eq!(mlp["old_median"], 11.0);
        assert_eq!(mlp["ratio"], 2.0);
        let cnn = rows.iter().find(|r| r["figure"] == "cnn").unwrap();
        assert!(cnn["ratio"].is_null() && cnn["new_median"].is_null());
    }
}
