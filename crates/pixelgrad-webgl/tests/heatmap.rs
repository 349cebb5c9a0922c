//! The visualisation primitive: colours follow the sign, white at zero, scaled by max |x|.

use pixelgrad_core::{Device, Tensor};
use pixelgrad_webgl::{HeatmapOptions, WebGlBackend, WebGlOptions};

#[test]
fn heatmap_of_a_matrix_has_expected_colours() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
    let dev = Device::new(b.clone());
    // Row 0: -2, 0, 2 ; row 1: -1, 0.5, 1.
    let t = Tensor::from_vec(&dev, &[-2.0, 0.0, 2.0, -1.0, 0.5, 1.0], [2, 3]).unwrap();
    let img = b.render_heatmap_tensor(&t, HeatmapOptions { pixel_size: 2, border: 1, columns: None }).unwrap();
    assert_eq!((img.width, img.height), (3 * 2 + 2, 2 * 2 + 2));
    assert_eq!(img.pixels.len(), (img.width * img.height * 4) as usize);
    // Element (r, c) covers pixels (1 + 2c .. , 1 + 2r ..).
    let px = |r: u32, c: u32| img.pixel(1 + 2 * c, 1 + 2 * r).unwrap();
    let neg = px(0, 0);
    assert!(neg[2] > 200 && neg[0] < 60, "-max is blue: {neg:?}");
    let zero = px(0, 1);
    assert!(zero.iter().all(|&v| v >= 250), "0 is white: {zero:?}");
    let pos = px(0, 2);
    assert!(pos[0] > 200 && pos[2] < 60, "+max is red: {pos:?}");
    let half_neg = px(1, 0);
    assert!(half_neg[2] > half_neg[0] && half_neg[0] > neg[0], "-max/2 is light blue: {half_neg:?}");
    let quarter = px(1, 1);
    assert!(quarter[0] > quarter[2] && quarter[2] > pos[2], "+max/4 is light red: {quarter:?}");
    // Border pixels are grey.
    let grey = img.pixel(0, 0).unwrap();
    assert!(grey[..3].iter().all(|&v| (126..=129).contains(&v)) && grey[0] == grey[2], "{grey:?}");
    assert!(img.pixels.chunks(4).any(|p| p != grey), "image is not blank");
}

#[test]
fn heatmap_of_a_filter_bank_is_a_grid_of_tiles_and_saves_as_png() {
    let b = WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap();
    let dev = Device::new(b.clone());
    // 2 filters x 3 channels of 4x5.
    let data: Vec<f32> = (0..2 * 3 * 4 * 5).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * (i as f32)).collect();
    let t = Tensor::from_vec(&dev, &data, [2, 3, 4, 5]).unwrap();
    let img = b.render_heatmap_tensor(&t, HeatmapOptions { pixel_size: 1, border: 1, columns: None }).unwrap();
    assert_eq!((img.width, img.height), (3 * 6 + 1, 2 * 5 + 1));
    // Last tile (filter 1, channel 2), last element: the largest |x| (119, odd -> negative).
    let last = img.pixel(2 * 6 + 1 + 4, 5 + 1 + 3).unwrap();
    assert!(last[2] > 200 && last[0] < 60, "{last:?}");
    let path = std::env::temp_dir().join(format!("pixelgrad-webgl-heatmap-{}.png", std::process::id()));
    pixelgrad_webgl::save_png(&img, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let _ = std::fs::remove_file(&path);
}
