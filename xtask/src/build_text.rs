//! The tokenizer's own wasm module (`cargo xtask build-wasm` builds it next to the main one):
//! `crates/pixelgrad-text-web` compiled for wasm32 and run through the same `wasm-bindgen
//! --target web` (and, with `--wasm-opt`, the same `wasm-opt -O3`) as `pixelgrad-web`, into
//! `web/pkg/pixelgrad_text.js` + `pixelgrad_text_bg.wasm`. `web/js/textmodule.js` loads it on a
//! page's first `pg.tokenizer`; the `tokenizers` crate thereby stays out of the main module,
//! which must stay under the 8 MiB Chrome lets a page instantiate on its main thread.
//!
//! A separate `cargo build`, not a second `-p` of the main one, so the main module's
//! dependencies are built with exactly the features they have without it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files this build writes into `pkg`.
pub const FILES: [&str; 3] = ["pixelgrad_text.js", "pixelgrad_text_bg.wasm", "pixelgrad_text.d.ts"];

/// `cargo build` of the crate for wasm32 (release unless `dev`).
pub fn cargo(root: &Path, dev: bool) -> Command {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(root).args(["build", "--target", "wasm32-unknown-unknown", "-p", "pixelgrad-text-web"]);
    if !dev {
        cargo.arg("--release");
    }
    cargo
}

/// The `.wasm` that [`cargo`] writes under target directory `target`.
pub fn compiled(target: &Path, dev: bool) -> PathBuf {
    target.join("wasm32-unknown-unknown").join(if dev { "debug" } else { "release" }).join("pixelgrad_text_web.wasm")
}

/// `wasm-bindgen` (CLI `cli`) of `wasm` into `pkg` as `pixelgrad_text.js` + `pixelgrad_text_bg.wasm`.
pub fn bindgen(cli: &Path, wasm: &Path, pkg: &Path) -> Command {
    let mut cmd = Command::new(cli);
    cmd.args(["--target", "web", "--out-name", "pixelgrad_text", "--out-dir"]).arg(pkg).arg(wasm);
    cmd
}
