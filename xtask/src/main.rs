//! `cargo xtask <task>`: project chores that need more than one cargo command.
//!
//! - `cargo xtask bench [--quick] [--only ...] [--no-build]` — pixelgrad vs TensorFlow.js in
//!   headless Chromium (`web/bench/`); `--native [ARGS...]` runs only `pixelgrad bench`;
//!   `--inference [--quick]` times ONNX models against ONNX Runtime Web instead.
//! - `cargo xtask bench-burn [--rounds N] [--seconds S]` — pixelgrad's WebGPU backend against
//!   Burn's wgpu backend on the same adapter (`bench/burn-side/`), alternating, with medians.
//! - `cargo xtask bench-compare --base REV [--rounds N] [--browser] [--inference]` — the whole
//!   engine before and after: the build at REV and this checkout's, measured alternately in one
//!   run (native bench and passes per step; the browser training and inference benches on request).
//! - `cargo xtask bench-federated [--nodes 4,8] [--rounds R] [--debug-cli] [--no-build]` — SecAgg+
//!   against plain FedAvg: bytes per node and round, client time by stage, server time.
//! - `cargo xtask bench-quality [--workloads W,...] [--backends ...] [--debug-cli]` — test accuracy
//!   per workload and backend (`pixelgrad train`), into web/bench/results and docs/benchmarks.md.
//! - `cargo xtask bench-report [--check] [--include FILE]` — `docs/benchmarks.md` from the
//!   committed results.
//! - `cargo xtask gpu-bundle [--out DIR] [--debug] [--no-burn]` — the release CLI, `burn-side`
//!   and the bench models in one folder under 64 MiB, for `scripts/gpu-bench.sh` on a GPU machine.
//! - `cargo xtask build-wasm [--dev] [--wasm-opt]` — the npm package in `web/pkg/`.
//! - `cargo xtask test` — every test (`scripts/test.sh`).
//! - `cargo xtask layout [CRATES_DIR]` — import circles between the files of one folder (see
//!   `layout.rs`); exits 1 on a circle not in its known list.
//! - `cargo xtask federated [--rounds N] [--browsers K] [--native M] [--dataset ...] [--alpha A]
//!   [--dp ...] [--json]` — a whole Flower federation on this machine (see `federated.rs`).

mod bench_burn;
mod bench_compare;
mod bench_federated;
mod bench_quality;
mod bench_report;
mod bench_web;
mod build_text;
mod build_threads;
mod build_wasm;
mod components;
mod demo;
mod federated;
mod gpu_bundle;
mod js_layout;
mod layout;
mod machine;
mod npm_manifest;
mod side_by_side;

use std::process::{exit, Command};

fn run(cmd: &mut Command) -> ! {
    match cmd.status() {
        Ok(s) => exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("xtask: could not run {cmd:?}: {e}");
            exit(1)
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => exit(bench_web::main(&args[1..])),
        Some("bench-burn") => exit(bench_burn::main(&args[1..])),
        Some("bench-compare") => exit(bench_compare::main(&args[1..])),
        Some("bench-federated") => exit(bench_federated::main(&args[1..])),
        Some("bench-quality") => exit(bench_quality::main(&args[1..])),
        Some("bench-report") => exit(bench_report::main(&args[1..])),
        Some("gpu-bundle") => exit(gpu_bundle::main(&args[1..])),
        Some("build-wasm") => exit(build_wasm::main(&args[1..])),
        Some("test") => run(Command::new("bash").arg("scripts/test.sh")),
        Some("demo") => exit(demo::main(&args[1..])),
        Some("federated") => exit(federated::main(&args[1..])),
        Some("layout") => exit(layout::main(&args[1..])),
        _ => {
            eprintln!("usage: cargo xtask bench [--quick] [--only TOKENS] [--no-build] | --inference [--quick] | --native [--backends cpu,webgpu,webgl] [--seconds S]\n       cargo xtask bench-burn [--rounds N] [--seconds S] [--no-build] [--json-out FILE]\n       cargo xtask bench-compare --base REV [--rounds N] [--seconds S] [--backends ...] [--browser] [--inference] [--only-browser] [--no-build] [--json-out FILE]\n       cargo xtask bench-federated [--nodes 4,8] [--rounds R] [--debug-cli] [--no-build] [--out FILE]\n       cargo xtask bench-quality [--workloads W,...] [--backends cpu,webgpu,webgl] [--debug-cli] [--mnist DIR] [--out FILE]\n       cargo xtask bench-report [--check] [--include RESULT_FILE]\n       cargo xtask gpu-bundle [--out DIR] [--debug] [--no-burn] [--pixelgrad-bin FILE] [--burn-bin FILE] [--models DIR]\n       cargo xtask build-wasm [--dev] [--wasm-opt]\n       cargo xtask test\n       cargo xtask federated [--rounds N] [--browsers K] [--native M] [--python P] [--dataset digits|idx:DIR] [--alpha A] [--dp off|client-clip:C|local:EPS,DELTA,C] [--json]");
            exit(2)
        }
    }
}
