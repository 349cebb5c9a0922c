//! Writes the seed corpora of the fuzz targets (see `harness/corpus.rs`): into
//! `fuzz/corpus/<target>/` (the repository's small seeds), or with the ONNX fixtures of
//! `target/onnx-fixtures` into `DIR/<target>/`.
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --bin make_corpus [DIR]

include!("../harness/corpus.rs");

fn main() {
    let fuzz = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (dir, all) = match std::env::args().nth(1) {
        Some(d) => (std::path::PathBuf::from(d), true),
        None => (fuzz.join("corpus"), false),
    };
    let n = write_seeds(&fuzz.join(".."), &dir, all).expect("write the corpus");
    println!("{n} seeds written to {}", dir.display());
}
