// PNG decoding to grey levels and the preprocessing `pixelgrad predict` applies after it.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/png.rs` and the stable test that runs
// the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any panic
// is a bug.

pub fn run(data: &[u8]) {
    let Ok((mut px, w, h)) = pixelgrad_data::decode_png_gray(data, "fuzz.png") else { return };
    assert_eq!(px.len(), w * h);
    if pixelgrad_data::auto_invert(&mut px, w, h).is_ok() {
        let _ = pixelgrad_data::resize_bilinear(&px, w, h, 8, 8);
    }
}
