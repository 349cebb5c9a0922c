// IDX image and label files, raw or gzipped (as `pixelgrad train --dataset idx:` and
// `pg.data.parseMnist` read them). The first byte picks images (bit 0 clear) or labels, and
// the gzip path: the IDX-aware one, capped at the size the header declares (bit 1 clear), or
// the plain one with the absolute ceiling.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/idx.rs` and the stable test that runs
// the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any panic
// is a bug.

pub fn run(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else { return };
    let inflated = if which & 2 == 0 {
        pixelgrad_data::maybe_gunzip_idx(rest.to_vec(), "fuzz")
    } else {
        pixelgrad_data::maybe_gunzip(rest.to_vec(), "fuzz")
    };
    let Ok(bytes) = inflated else { return };
    assert!(bytes.len() as u64 <= pixelgrad_data::MAX_GUNZIP_BYTES);
    if which & 1 == 0 {
        if let Ok(img) = pixelgrad_data::parse_idx_images(&bytes, "fuzz") {
            assert_eq!(img.pixels.len(), img.n * img.rows * img.cols);
        }
    } else {
        let _ = pixelgrad_data::parse_idx_labels(&bytes, "fuzz");
    }
}
