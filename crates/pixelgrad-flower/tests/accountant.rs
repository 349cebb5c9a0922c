//! The Rényi-DP accountant against Google's `dp-accounting` (the oracle the venv of
//! `scripts/flower-venv.sh` pins; flwr's own `flwr[dp]` accountant wraps it), within 1 %:
//! the plain Gaussian (local DP and distributed DP, one release per round) and the
//! Poisson-subsampled Gaussian (integer and fractional orders), at several noise levels,
//! round counts and deltas; and flwr's own `RdpAccountant` gives the same number.
//!
//! Without the venv these tests say so and pass, unless `PIXELGRAD_REQUIRE_FLWR=1`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use pixelgrad_flower::accountant::RdpAccountant;

fn python() -> Option<PathBuf> {
    let p = std::env::var_os("PIXELGRAD_FLWR_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/flwr-venv/bin/python")
        });
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("PIXELGRAD_REQUIRE_FLWR").is_some() {
        panic!(
            "flwr venv missing at {} (run scripts/flower-venv.sh)",
            p.display()
        );
    }
    eprintln!(
        "skipped: no flwr venv at {} (run scripts/flower-venv.sh)",
        p.display()
    );
    None
}

#[test]
fn epsilon_matches_dp_accounting_within_one_percent() {
    let Some(py) = python() else { return };
    let mut cases = Vec::new();
    for &(q, z) in &[
        (1.0, 0.8),
        (1.0, 1.1),
        (1.0, 4.0),
        (1.0, 10.0),
        (0.5, 1.0),
        (0.1, 1.1),
        (0.01, 1.1),
        (0.004, 0.7),
        (0.25, 3.0),
    ] {
        for &steps in &[1u64, 10, 100, 1000] {
            for &delta in &[1e-5, 1e-3] {
                cases.push(serde_json::json!({"q": q, "z": z, "steps": steps, "delta": delta}));
            }
        }
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/dp_oracle.py");
    let mut child = Command::new(&py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the oracle");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            serde_json::Value::Array(cases.clone())
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let theirs = v["epsilons"].as_array().unwrap();
    let mut worst = 0f64;
    for (c, t) in cases.iter().zip(theirs) {
        let (q, z, steps, delta) = (
            c["q"].as_f64().unwrap(),
            c["z"].as_f64().unwrap(),
            c["steps"].as_u64().unwrap(),
            c["delta"].as_f64().unwrap(),
        );
        let mut a = RdpAccountant::new();
        a.compose(q, z, steps);
        let ours = a.epsilon(delta);
        let t = t.as_f64().unwrap();
        let rel = (ours - t).abs() / t.max(1e-12);
        worst = worst.max(rel);
        assert!(
            rel < 0.01,
            "q {q} z {z} steps {steps} delta {delta}: epsilon {ours} vs dp-accounting {t}"
        );
        // composing one at a time is the same as all at once
        let mut b = RdpAccountant::new();
        for _ in 0..steps.min(10) {
            b.compose(q, z, 1);
        }
        if steps <= 10 {
            assert!((b.epsilon(delta) - ours).abs() <= 1e-9 * ours.max(1.0));
        }
    }
    eprintln!(
        "{} cases, worst relative difference {worst:.2e}",
        cases.len()
    );
    // flwr's own accountant (its serverapp RdpAccountant, no amplification) agrees
    let flwr = v["flwr_first_q1"].as_f64().unwrap();
    let mut a = RdpAccountant::new();
    a.compose(1.0, 0.8, 1);
    assert!(
        (a.epsilon(1e-5) - flwr).abs() / flwr < 0.01,
        "flwr's RdpAccountant {flwr}"
    );
}
