// PNG decoding to 8-bit RGBA and what `pixelgrad run` does next with a `NAME=photo.png` input:
// the bytes become a `[1, 4, H, W]` tensor in [0, 1] on the CPU backend and go through the
// on-device preprocessing (`pixelgrad_image::preprocess`: resize, fit, normalise, channels, layout).
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/png_rgba.rs` and the stable test that
// runs the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any
// panic is a bug.

pub fn run(data: &[u8]) {
    let Ok((px, w, h)) = pixelgrad_data::decode_png_rgba8(data, "fuzz.png") else { return };
    assert_eq!(px.len(), 4 * w * h, "{w}x{h}");
    assert!(w * h <= pixelgrad_data::MAX_PNG_PIXELS as usize);
    // The decoder is the target; the preprocessing runs on images of a size a fuzzing input
    // decodes to quickly (the pixel cap itself is unit-tested).
    if w * h > 1 << 14 {
        return;
    }
    let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
    let mut chw = vec![0f32; 4 * w * h];
    for (i, p) in px.chunks_exact(4).enumerate() {
        for c in 0..4 {
            chw[c * w * h + i] = f32::from(p[c]) / 255.0;
        }
    }
    let Ok(x) = pixelgrad_core::Tensor::from_vec(&dev, &chw, [1, 4, h, w]) else { return };
    use pixelgrad_image::{Fit, Layout, PixelSpec};
    for (fit, channels, layout) in [(Fit::Fill, 3, Layout::Nchw), (Fit::Cover, 1, Layout::Nhwc), (Fit::Contain, 4, Layout::Nchw)] {
        let spec = PixelSpec { size: Some((5, 7)), fit, channels, layout, ..PixelSpec::default() };
        if let Ok((t, _)) = pixelgrad_image::preprocess(&x, &spec) {
            let v = t.to_vec().expect("read back");
            assert_eq!(v.len(), 5 * 7 * channels);
        }
    }
}
