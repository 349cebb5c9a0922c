//! What the side-by-side benchmarks (`bench-burn`, `bench-compare`) share: running a tool and
//! keeping its output, the machine's load while they run, and the medians they compare.

use std::process::Command;

/// Runs `cmd` and returns its stdout; Err with the last lines of its stderr when it fails.
pub fn output(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("could not run {what}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Err(format!("{what} failed ({}):\n{tail}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The 1, 5 and 15 minute load averages, as `a / b / c` (printed beside every round: a shared
/// machine's numbers mean little without it).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" / "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The median of the finite values, or None when there are none.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 })
}

/// A figure for a table: whole numbers from 100 on, two decimals below, `n/a` when missing.
pub fn fmt(x: Option<f64>) -> String {
    match x {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "n/a".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_skip_non_finite_values_and_figures_round_by_size() {
        assert_eq!(median(&[3.0, f64::NAN, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[f64::INFINITY]), None);
        assert_eq!((fmt(Some(1234.5)), fmt(Some(1.234)), fmt(None)), ("1234".to_string(), "1.23".to_string(), "n/a".to_string()));
    }
}
