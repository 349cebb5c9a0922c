//! The threaded wasm build of `pixelgrad-web` (`cargo xtask build-wasm --threads`): the same
//! crate compiled with wasm threads (`+atomics,+bulk-memory,+mutable-globals`, shared memory),
//! which needs the standard library rebuilt with those features (`-Z build-std`, nightly with
//! `rust-src`). The CPU kernels then split work over Web Workers (pixelgrad-cpu `threads`).
//!
//! Its own target directory (`target/wasm-threads`): other flags would otherwise invalidate
//! the single-threaded build's artifacts on every switch.

use std::path::{Path, PathBuf};
use std::process::Command;

type Res<T> = Result<T, String>;

/// The target features of the threaded build (SIMD as in the single-threaded one).
pub const RUSTFLAGS: &str = "-C target-feature=+simd128,+atomics,+bulk-memory,+mutable-globals";

/// Link flags of the final module: a shared memory, imported (the workers instantiate the
/// module on the page's memory), with its maximum at 4 GiB like the single-threaded build's
/// (a shared memory must declare one), and the thread-local storage entry points wasm-bindgen
/// calls when it starts each thread.
const LINK_ARGS: [&str; 7] = [
    "--shared-memory",
    "--import-memory",
    "--max-memory=4294967296",
    "--export=__wasm_init_tls",
    "--export=__tls_size",
    "--export=__tls_align",
    "--export=__tls_base",
];

fn rustup(args: &[&str]) -> Res<String> {
    let out = Command::new("rustup")
        .args(args)
        .output()
        .map_err(|e| format!("could not run rustup (needed for the nightly toolchain of the threaded build): {e}"))?;
    if !out.status.success() {
        return Err(format!("rustup {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Nightly with `rust-src`, installed through rustup when missing (as `build-wasm` installs
/// the wasm-bindgen CLI).
fn ensure_nightly() -> Res<()> {
    let have = rustup(&["component", "list", "--toolchain", "nightly", "--installed"]).unwrap_or_default();
    if have.lines().any(|l| l.trim() == "rust-src") {
        return Ok(());
    }
    eprintln!("xtask build-wasm: installing the nightly toolchain with rust-src (for the threaded build)");
    rustup(&["toolchain", "install", "nightly", "--profile", "minimal", "--component", "rust-src"]).map(|_| ())
}

/// Builds the threaded `pixelgrad_web.wasm` (release unless `dev`); returns its path.
pub fn build(root: &Path, target: &Path, dev: bool) -> Res<PathBuf> {
    ensure_nightly()?;
    let dir = target.join("wasm-threads");
    let mut cargo = Command::new("rustup");
    cargo
        .current_dir(root)
        .args(["run", "nightly", "cargo", "rustc", "-p", "pixelgrad-web", "--lib", "--target", "wasm32-unknown-unknown"])
        .args(["-Z", "build-std=panic_abort,std", "--target-dir"])
        .arg(&dir)
        .env("RUSTFLAGS", RUSTFLAGS)
        // the stable toolchain's variables (this runs under `cargo run`) must not leak into nightly's
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN");
    if !dev {
        cargo.arg("--release");
    }
    cargo.arg("--");
    for a in LINK_ARGS {
        cargo.args(["-C", &format!("link-arg={a}")]);
    }
    match cargo.status() {
        Ok(s) if s.success() => {}
        Ok(s) => return Err(format!("the threaded build (cargo +nightly rustc -p pixelgrad-web, -Z build-std) failed ({s})")),
        Err(e) => return Err(format!("could not run the threaded build: {e}")),
    }
    let wasm = dir.join("wasm32-unknown-unknown").join(if dev { "debug" } else { "release" }).join("pixelgrad_web.wasm");
    if !wasm.is_file() {
        return Err(format!("{} was not produced", wasm.display()));
    }
    Ok(wasm)
}
