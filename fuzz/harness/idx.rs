// IDX image and label files, raw or gzipped (as `pixelgrad train --dataset idx:` and
// `pg.data.parseMnist` read them).
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/idx.rs` and the stable test that runs
// the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any panic
// is a bug.

pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else { return };
    let Ok(bytes) = pixelgrad_data::maybe_gunzip(rest.to_vec(), "fuzz") else { return };
    if which & 1 == 0 {
        if let Ok(img) = pixelgrad_data::parse_idx_images(&bytes, "fuzz") {
            assert_eq!(img.pixels.len(), img.n * img.rows * img.cols);
        }
    } else {
        let _ = pixelgrad_data::parse_idx_labels(&bytes, "fuzz");
    }
}
