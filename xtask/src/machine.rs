//! The machine a benchmark ran on, in the fields every result file records
//! (web/bench/lib/machine.mjs), and the run's UTC date.

use std::path::Path;
use std::process::Command;

/// Trimmed stdout of a command, or None.
pub fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The machine, in the fields every result file records (web/bench/lib/machine.mjs).
pub fn record(root: &Path) -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split(':').nth(1)))
        .unwrap_or("unknown")
        .trim()
        .to_string();
    let mem_kib: f64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok()))
        .unwrap_or(0.0);
    let load: Vec<f64> =
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    serde_json::json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memoryGiB": (mem_kib / 1048576.0).round(),
        "os": output(Command::new("uname").args(["-srm"])).unwrap_or_default(),
        "loadAverageAtStart": load,
        "commit": output(Command::new("git").arg("-C").arg(root).args(["rev-parse", "--short", "HEAD"])),
    })
}

/// The current time as `YYYY-MM-DDTHH:MM:SS.000Z` (the result files' `date`).
pub fn utc_now() -> Result<String, String> {
    output(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%S.000Z"])).ok_or_else(|| "date -u failed".to_string())
}
