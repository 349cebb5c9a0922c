//! PNG loading of files encoded here, and the image helpers.

mod common;

use common::TempDir;
use pixelgrad_data::*;

fn encode(
    w: u32,
    h: u32,
    color: png::ColorType,
    depth: png::BitDepth,
    data: &[u8],
    palette: Option<(&[u8], &[u8])>,
) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(color);
        enc.set_depth(depth);
        if let Some((plte, trns)) = palette {
            enc.set_palette(plte.to_vec());
            if !trns.is_empty() {
                enc.set_trns(trns.to_vec());
            }
        }
        let mut writer = enc.write_header().unwrap();
        writer.write_image_data(data).unwrap();
    }
    out
}

#[test]
fn grey8_file() {
    let dir = TempDir::new("png");
    let bytes = encode(
        3,
        2,
        png::ColorType::Grayscale,
        png::BitDepth::Eight,
        &[0, 51, 102, 153, 204, 255],
        None,
    );
    let p = dir.write("g.png", &bytes);
    let (px, w, h) = load_png_gray(&p).unwrap();
    assert_eq!((w, h), (3, 2));
    let want = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
    for (a, b) in px.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{px:?}");
    }
}

#[test]
fn rgba_alpha_composited_on_white() {
    // Pixel 0: opaque black; 1: fully transparent black; 2: half-transparent black; 3: opaque red.
    let data = [0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0, 128, 255, 0, 0, 255];
    let bytes = encode(
        4,
        1,
        png::ColorType::Rgba,
        png::BitDepth::Eight,
        &data,
        None,
    );
    let (px, _, _) = decode_png_gray(&bytes, "rgba.png").unwrap();
    assert!(px[0].abs() < 1e-6);
    assert!((px[1] - 1.0).abs() < 1e-6);
    assert!((px[2] - (1.0 - 128.0 / 255.0)).abs() < 1e-6);
    assert!((px[3] - 0.299).abs() < 1e-6);
}

#[test]
fn sixteen_bit_palette_and_low_depth() {
    // 16-bit grey keeps its precision.
    let bytes = encode(
        2,
        1,
        png::ColorType::Grayscale,
        png::BitDepth::Sixteen,
        &[0x80, 0x00, 0xff, 0xff],
        None,
    );
    let (px, _, _) = decode_png_gray(&bytes, "g16.png").unwrap();
    assert!((px[0] - 32768.0 / 65535.0).abs() < 1e-6 && px[1] == 1.0);

    // 1-bit grey: 8 pixels in one byte.
    let bytes = encode(
        8,
        1,
        png::ColorType::Grayscale,
        png::BitDepth::One,
        &[0b1010_0000],
        None,
    );
    let (px, _, _) = decode_png_gray(&bytes, "g1.png").unwrap();
    assert_eq!(px, vec![1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);

    // Palette with a transparent entry: index 1 is transparent -> white.
    let plte = [0, 0, 0, 0, 0, 0, 255, 255, 255];
    let trns = [255, 0];
    let bytes = encode(
        3,
        1,
        png::ColorType::Indexed,
        png::BitDepth::Eight,
        &[0, 1, 2],
        Some((&plte, &trns)),
    );
    let (px, _, _) = decode_png_gray(&bytes, "pal.png").unwrap();
    assert_eq!(px.len(), 3);
    assert!(
        px[0].abs() < 1e-6 && (px[1] - 1.0).abs() < 1e-6 && (px[2] - 1.0).abs() < 1e-6,
        "{px:?}"
    );
}

#[test]
fn png_errors_name_the_file() {
    let dir = TempDir::new("png-err");
    let p = dir.write("notpng.png", b"hello, not a png");
    let msg = load_png_gray(&p).unwrap_err().to_string();
    assert!(msg.starts_with("notpng.png: PNG: "), "{msg}");
    let msg = load_png_gray(dir.path().join("missing.png"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing.png: not found"), "{msg}");
}

#[test]
fn drawn_digit_to_mnist_style() {
    // A 40x40 white canvas with a dark vertical bar, as a user would draw a "1".
    let (w, h) = (40, 40);
    let mut img = vec![1.0f32; w * h];
    for y in 8..32 {
        for x in 18..22 {
            img[y * w + x] = 0.0;
        }
    }
    assert!(auto_invert(&mut img, w, h).unwrap());
    let small = resize_bilinear(&img, w, h, 28, 28).unwrap();
    assert_eq!(small.len(), 28 * 28);
    assert!(small[0] < 1e-6, "background is black after inversion");
    assert!(
        small[14 * 28 + 14] > 0.9,
        "stroke is bright: {}",
        small[14 * 28 + 14]
    );
    // Mass is preserved approximately: area scales by (28/40)^2.
    let m0: f32 = img.iter().sum::<f32>() * (28.0 * 28.0) / (40.0 * 40.0);
    let m1: f32 = small.iter().sum();
    assert!((m0 - m1).abs() / m0 < 0.02, "{m0} vs {m1}");
}

#[test]
fn resize_keeps_constant_image() {
    let img = vec![0.7f32; 13 * 9];
    for (nw, nh) in [(28, 28), (5, 3), (13, 9), (100, 2)] {
        let r = resize_bilinear(&img, 13, 9, nw, nh).unwrap();
        assert!(r.iter().all(|&v| (v - 0.7).abs() < 1e-5), "{nw}x{nh}");
    }
    let mut inv = vec![0.25f32, 1.0];
    invert(&mut inv);
    assert_eq!(inv, vec![0.75, 0.0]);
}
