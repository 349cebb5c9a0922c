//! `auto` by measurement: the test hook `PIXELGRAD_TEST_SLOW_BACKENDS` makes named backends 50 ms
//! slower per timed step, so which backend is fastest is known without timing anything here;
//! `PIXELGRAD_AUTO_SOFTWARE=1` lets `auto` consider this machine's software GPUs, so it has
//! more than one candidate to measure.

use std::path::Path;
use std::process::{Command, Output};

fn pixelgrad(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pixelgrad"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn fastest(out: &Output) -> String {
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines().find_map(|l| l.strip_prefix("fastest: ")).unwrap_or_else(|| panic!("no 'fastest:' line in {s}")).to_string()
}

#[test]
fn backends_measure_names_the_backend_that_is_not_slowed() {
    let out = pixelgrad(&["backends", "--measure"], &[("PIXELGRAD_TEST_SLOW_BACKENDS", "cpu")]);
    let f = fastest(&out);
    assert!(["webgpu", "webgl", "webgl1"].contains(&f.as_str()), "cpu was slowed, yet {f} is fastest");
    let out = pixelgrad(&["backends", "--measure"], &[("PIXELGRAD_TEST_SLOW_BACKENDS", "webgpu,webgl,webgl1")]);
    assert_eq!(fastest(&out), "cpu");
    let table = String::from_utf8_lossy(&out.stdout);
    for b in ["webgpu", "webgl", "cpu"] {
        assert!(table.lines().any(|l| l.trim_start().starts_with(b) && l.contains("ms/step")), "{b} not timed:\n{table}");
    }
}

fn train_auto(cache: &Path, slow: &str, out_dir: &Path) -> serde_json::Value {
    let out = pixelgrad(
        &["train", "--backend", "auto", "--epochs", "1", "--json", "--force", "--out", out_dir.to_str().unwrap()],
        &[("PIXELGRAD_AUTO_SOFTWARE", "1"), ("PIXELGRAD_CACHE_DIR", cache.to_str().unwrap()), ("PIXELGRAD_TEST_SLOW_BACKENDS", slow)],
    );
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap()
}

#[test]
fn train_auto_measures_the_model_picks_the_fastest_and_caches_the_choice() {
    let dir = std::env::temp_dir().join(format!("pixelgrad-auto-{}", std::process::id()));
    let (cache, runs) = (dir.join("cache"), dir.join("run"));
    let j = train_auto(&cache, "cpu,webgl", &runs);
    let m = &j["backend_measured"];
    assert_eq!(m["chosen"], "webgpu", "{j}");
    assert_eq!(j["backend"], "webgpu", "{j}");
    assert_eq!(m["cached"], false);
    let timed: Vec<&str> = m["timings"].as_array().unwrap().iter().map(|t| t["backend"].as_str().unwrap()).collect();
    assert_eq!(timed, ["webgpu", "webgl", "cpu"], "{m}");
    assert!(cache.join("auto-backend.json").is_file());
    // The same model on the same devices: the cached choice, even though the hook now slows
    // webgpu (nothing is measured again).
    let again = train_auto(&cache, "webgpu", &runs);
    assert_eq!(again["backend_measured"]["chosen"], "webgpu", "{again}");
    assert_eq!(again["backend_measured"]["cached"], true);
    // A corrupt cache is ignored: measured again, and this time webgpu is the slow one.
    std::fs::write(cache.join("auto-backend.json"), b"{ not json").unwrap();
    let fresh = train_auto(&cache, "webgpu,webgl", &runs);
    assert_eq!(fresh["backend_measured"]["chosen"], "cpu", "{fresh}");
    assert_eq!(fresh["backend_measured"]["cached"], false);
    std::fs::remove_dir_all(&dir).ok();
}
