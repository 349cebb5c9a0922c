//! `cargo xtask <task>`: project chores that need more than one cargo command.
//!
//! - `cargo xtask bench [--native] [ARGS...]` — the native benchmark (`pixelgrad bench`): matmul
//!   GFLOP/s and training steps/s on every backend this machine has, side by side.
//! - `cargo xtask test` — every test (`scripts/test.sh`).

mod demo;

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
        Some("bench") => {
            let rest: Vec<&String> = args[1..].iter().filter(|a| *a != "--native").collect();
            run(Command::new(env!("CARGO")).args(["run", "--release", "-q", "-p", "pixelgrad-cli", "--", "bench"]).args(rest))
        }
        Some("test") => run(Command::new("bash").arg("scripts/test.sh")),
        Some("demo") => exit(demo::main(&args[1..])),
        _ => {
            eprintln!("usage: cargo xtask bench [--native] [--backends cpu,webgpu,webgl] [--seconds S]\n       cargo xtask test");
            exit(2)
        }
    }
}
