//! The ONNX fuzz targets as stable tests (`fuzz/`, cargo-fuzz on nightly, runs them for
//! real): the ONNX harness on structure-aware mutations (`fuzz/harness/onnx_mutate.rs`: node
//! inputs and outputs dropped, duplicated, reordered and rewired, operator types swapped,
//! extreme attributes) of every seed, and on every kept regression input; the `.npy` harness
//! on its seeds, their byte mutations and its regressions. Any panic fails, naming the input.
//!
//! `PIXELGRAD_WRITE_FUZZ_CORPUS=1 cargo test -p pixelgrad-onnx --test fuzz_harness` rewrites
//! the committed seeds (`fuzz/corpus/onnx_npy/`, `fuzz/corpus/onnx/op_*.onnx`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

mod onnx {
    include!("../../../fuzz/harness/onnx.rs");
}
mod mutate {
    include!("../../../fuzz/harness/onnx_mutate.rs");
}
mod npy_target {
    include!("../../../fuzz/harness/onnx_npy.rs");
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<(String, Vec<u8>)> =
        entries.flatten().filter_map(|e| Some((e.path().display().to_string(), std::fs::read(e.path()).ok()?))).collect();
    v.sort();
    v
}

/// The names of the inputs `f` panicked on. With `PIXELGRAD_KEEP_PANICS=1` each is also
/// written to `fuzz/regressions/<target>/` (named by the input), to keep as a regression input.
fn panics(target: &str, inputs: &[(String, Vec<u8>)], f: fn(&[u8])) -> Vec<String> {
    // PIXELGRAD_FUZZ_TRACE=1 names each input before it runs (an abort, such as a failed
    // allocation, ends the process without naming it otherwise)
    let trace = std::env::var("PIXELGRAD_FUZZ_TRACE").as_deref() == Ok("1");
    // PIXELGRAD_FUZZ_ONLY=NAME runs only the inputs of that name, and writes them to the
    // temporary folder first (to debug one with a debugger)
    let only = std::env::var("PIXELGRAD_FUZZ_ONLY").ok();
    let bad: Vec<&(String, Vec<u8>)> = inputs
        .iter()
        .filter(|(name, bytes)| match &only {
            Some(o) if name == o => std::fs::write(std::env::temp_dir().join("pixelgrad-fuzz-input"), bytes).is_ok(),
            Some(_) => false,
            None => true,
        })
        .filter(|(name, b)| {
            if trace {
                eprintln!("fuzz input: {name}");
            }
            catch_unwind(AssertUnwindSafe(|| f(b))).is_err()
        })
        .collect();
    if std::env::var("PIXELGRAD_KEEP_PANICS").as_deref() == Ok("1") {
        let dir = repo().join("fuzz/regressions").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &bad {
            let short: String = name
                .rsplit("onnx-fixtures/ops/")
                .next()
                .unwrap_or(name)
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            std::fs::write(dir.join(short), bytes).unwrap();
        }
    }
    bad.into_iter().map(|(n, _)| n.clone()).collect()
}

/// Writes (with `PIXELGRAD_WRITE_FUZZ_CORPUS=1`) or checks the committed seeds.
fn committed(dir: &str, seeds: &[(String, Vec<u8>)]) {
    let dir = repo().join(dir);
    let write = std::env::var("PIXELGRAD_WRITE_FUZZ_CORPUS").as_deref() == Ok("1");
    for (name, bytes) in seeds {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
        assert_eq!(
            std::fs::read(&path).ok().as_ref(),
            Some(bytes),
            "{} is missing or stale: PIXELGRAD_WRITE_FUZZ_CORPUS=1 cargo test -p pixelgrad-onnx --test fuzz_harness",
            path.display()
        );
    }
}

/// More mutations per seed: `PIXELGRAD_FUZZ_SCALE=100` runs a hundred times as many (a long
/// deterministic fuzzing run on stable, without libFuzzer).
fn scale() -> u64 {
    std::env::var("PIXELGRAD_FUZZ_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}

#[test]
fn onnx_structured_mutations_never_panic() {
    let ops = mutate::op_seeds();
    committed("fuzz/corpus/onnx", &ops);
    let mut seeds: Vec<(String, Vec<u8>, u64)> = ops.into_iter().map(|(n, b)| (n, b, 32)).collect();
    // the committed corpus (op seeds, the exported CNN) and the per-operator fixtures when
    // scripts/onnx-fixtures.sh has made them: fewer mutations each, there are 300 of them
    seeds.extend(files(&repo().join("fuzz/corpus/onnx")).into_iter().filter(|(n, _)| !n.contains("/op_")).map(|(n, b)| (n, b, 256)));
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(repo().join("target/onnx-fixtures/ops"))
        .map(|d| d.flatten().map(|e| e.path().join("model.onnx")).collect())
        .unwrap_or_default();
    fixtures.sort();
    for path in fixtures {
        match std::fs::read(&path) {
            Ok(b) if b.len() <= 4096 => seeds.push((path.display().to_string(), b, 16)),
            _ => {}
        }
    }
    let mut inputs = files(&repo().join("fuzz/regressions/onnx"));
    let mut structured = 0;
    for (name, bytes, count) in &seeds {
        inputs.push((format!("seed {name}"), bytes.clone()));
        for k in 0..*count * scale() {
            if let Some(m) = mutate::mutate(bytes, k, 1 << 16) {
                inputs.push((format!("{name} structured mutation {k}"), m));
                structured += 1;
            }
        }
    }
    assert!(structured > 1000, "only {structured} structured mutations");
    let bad = panics("onnx", &inputs, onnx::run);
    println!("onnx: {} inputs ({structured} structured mutations of {} seeds)", inputs.len(), seeds.len());
    assert!(bad.is_empty(), "onnx: {} of {} inputs panicked: {bad:?}", bad.len(), inputs.len());
}

/// The mutator is deterministic and reaches what byte mutations do not: nodes that lose an
/// input or an output, and operators swapped for others.
#[test]
fn the_mutator_changes_structure_deterministically() {
    let seeds = mutate::op_seeds();
    let conv = &seeds.iter().find(|(n, _)| n == "op_Conv.onnx").unwrap().1;
    assert_eq!(mutate::mutate(conv, 7, 1 << 16), mutate::mutate(conv, 7, 1 << 16));
    let (mut fewer_inputs, mut other_op) = (0, 0);
    for k in 0..200 {
        let m = pixelgrad_onnx::proto::decode_model(&mutate::mutate(conv, k, 1 << 16).unwrap()).unwrap();
        if let Some(n) = m.graph.as_ref().and_then(|g| g.node.first()) {
            fewer_inputs += usize::from(n.input.len() < 2);
            other_op += usize::from(n.op_type != "Conv");
        }
    }
    assert!(fewer_inputs > 5 && other_op > 5, "{fewer_inputs} with fewer inputs, {other_op} with another operator");
    assert_eq!(mutate::mutate(b"\xff\xff not a model", 1, 1 << 16), None);
}

/// Inputs derived from `seed` without randomness: prefixes, single-byte flips, bytes forced to
/// 0x00 / 0xff, and digits of the header changed.
fn byte_mutations(seed: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let n = seed.len();
    for cut in [0, 1, 6, 8, 9, 10, 11, 12, 20, n / 2, n.saturating_sub(1)] {
        if cut < n {
            out.push(seed[..cut].to_vec());
        }
    }
    for at in 0..n.min(128) {
        for v in [seed[at] ^ 0x01, 0x00, 0xff, b'(', b')', b'9', b'-'] {
            let mut m = seed.to_vec();
            m[at] = v;
            out.push(m);
        }
    }
    out
}

#[test]
fn npy_reader_never_panics() {
    let seeds = npy_target::seeds();
    committed("fuzz/corpus/onnx_npy", &seeds);
    let mut inputs = files(&repo().join("fuzz/regressions/onnx_npy"));
    for (name, bytes) in &seeds {
        inputs.push((format!("seed {name}"), bytes.clone()));
        inputs.extend(byte_mutations(bytes).into_iter().enumerate().map(|(k, m)| (format!("{name} mutation {k}"), m)));
    }
    let bad = panics("onnx_npy", &inputs, npy_target::run);
    assert!(bad.is_empty(), "npy: {} of {} inputs panicked: {bad:?}", bad.len(), inputs.len());
}
