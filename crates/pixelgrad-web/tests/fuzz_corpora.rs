//! The fuzz targets (`fuzz/`, run with cargo-fuzz on nightly) as ordinary stable tests: each
//! parser harness runs on its seed corpus, on every file kept in `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` (crashes the fuzzer found, kept as regression inputs), and on
//! cheap deterministic mutations of the seeds (truncations, byte flips, bytes set to 0x00 and
//! 0xff). Any panic is a failure naming the input. No fuzzer, no nightly, a few seconds.
//!
//! `PIXELGRAD_WRITE_FUZZ_CORPUS=1 cargo test -p pixelgrad-web --test fuzz_corpora` rewrites
//! `fuzz/corpus/` from the encoders (`fuzz/harness/corpus.rs`); `=DIR` writes every seed,
//! the ONNX fixtures included, into `DIR` (what `scripts/fuzz.sh` fuzzes from).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

mod corpus {
    include!("../../../fuzz/harness/corpus.rs");
}
mod idx {
    include!("../../../fuzz/harness/idx.rs");
}
mod csv {
    include!("../../../fuzz/harness/csv.rs");
}
mod png_target {
    include!("../../../fuzz/harness/png.rs");
}
mod png_rgba {
    include!("../../../fuzz/harness/png_rgba.rs");
}
mod safetensors_target {
    include!("../../../fuzz/harness/safetensors.rs");
}
mod spec {
    include!("../../../fuzz/harness/spec.rs");
}
mod onnx {
    include!("../../../fuzz/harness/onnx.rs");
}
mod flower_message {
    include!("../../../fuzz/harness/flower_message.rs");
}
mod flower_npy {
    include!("../../../fuzz/harness/flower_npy.rs");
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Inputs derived from `seed` without randomness: prefixes at a few cut points, single-byte
/// flips at evenly spread positions, and bytes forced to 0x00 / 0xff.
fn mutations(seed: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let n = seed.len();
    for cut in [0, 1, 2, 3, 4, 7, 8, 12, 16, 24, 32, n / 4, n / 2, n.saturating_sub(1)] {
        if cut < n {
            out.push(seed[..cut].to_vec());
        }
    }
    let spots = 24.min(n);
    for k in 0..spots {
        let at = k * n / spots;
        for v in [seed[at] ^ 0x01, seed[at] ^ 0x80, 0x00, 0xff] {
            let mut m = seed.to_vec();
            m[at] = v;
            out.push(m);
        }
    }
    out
}

/// Runs `f` on every input; the names of those that panicked.
fn panics(inputs: &[(String, Vec<u8>)], f: fn(&[u8])) -> Vec<String> {
    inputs.iter().filter(|(_, b)| catch_unwind(AssertUnwindSafe(|| f(b))).is_err()).map(|(n, _)| n.clone()).collect()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<(String, Vec<u8>)> =
        entries.flatten().filter_map(|e| Some((e.path().display().to_string(), std::fs::read(e.path()).ok()?))).collect();
    v.sort();
    v
}

fn check(target: &str, f: fn(&[u8])) {
    let seeds: Vec<(String, Vec<u8>)> =
        corpus::seeds(&repo()).into_iter().filter(|(t, _, _)| *t == target).map(|(_, n, b)| (format!("seed {n}"), b)).collect();
    assert!(!seeds.is_empty(), "no seeds for {target}");
    let mut inputs = seeds.clone();
    for dir in ["fuzz/corpus", "fuzz/regressions"] {
        inputs.extend(files(&repo().join(dir).join(target)));
    }
    for (name, b) in &seeds {
        inputs.extend(mutations(b).into_iter().enumerate().map(|(k, m)| (format!("{name} mutation {k}"), m)));
    }
    let bad = panics(&inputs, f);
    assert!(bad.is_empty(), "{target}: {} of {} inputs panicked: {bad:?}", bad.len(), inputs.len());
}

#[test]
fn idx_parser() {
    check("idx", idx::run);
}

#[test]
fn csv_parser() {
    check("csv", csv::run);
}

#[test]
fn png_decoder() {
    check("png", png_target::run);
}

#[test]
fn png_rgba_decoder_of_pixelgrad_run() {
    check("png_rgba", png_rgba::run);
}

#[test]
fn safetensors_model_and_checkpoint_files() {
    check("safetensors", safetensors_target::run);
}

#[test]
fn json_model_spec() {
    check("spec", spec::run);
}

#[test]
fn onnx_models() {
    check("onnx", onnx::run);
}

#[test]
fn flower_messages_and_object_trees() {
    check("flower_message", flower_message::run);
}

#[test]
fn flower_npy_reader() {
    check("flower_npy", flower_npy::run);
}

#[test]
fn committed_corpus_matches_the_encoders() {
    let dir = repo().join("fuzz/corpus");
    match std::env::var("PIXELGRAD_WRITE_FUZZ_CORPUS").as_deref() {
        Ok("1") => assert!(corpus::write_seeds(&repo(), &dir, false).unwrap() > 0),
        // another value: a directory for a fuzzing run, with the ONNX fixtures
        Ok(other) => assert!(corpus::write_seeds(&repo(), Path::new(other), true).unwrap() > 0),
        Err(_) => {}
    }
    // every seed the encoders make is in the repository (the ONNX fixtures are optional)
    for seed in corpus::seeds(&repo()) {
        if corpus::is_fixture(&seed) {
            continue;
        }
        let (t, name, bytes) = seed;
        let path = dir.join(t).join(&name);
        let on_disk = std::fs::read(&path).unwrap_or_default();
        // safetensors headers hold a HashMap's metadata in no fixed order: present is enough
        assert!(
            on_disk == bytes || (t == "safetensors" && !on_disk.is_empty()),
            "{} is missing or stale: PIXELGRAD_WRITE_FUZZ_CORPUS=1 cargo test -p pixelgrad-web --test fuzz_corpora",
            path.display()
        );
    }
}
