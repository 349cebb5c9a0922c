//! `fromPixels` on WebGL2 (llvmpipe): the from_pixels fragment pass against the host reference
//! `pixelgrad_image::host`, through a reused pixel texture (as `texSubImage2D` from a
//! DOM source fills it in the browser) and from host pixels with padded rows, for every fit,
//! both layouts, 1/3/4 channels, 2x and 5x downscales and an upscale.

use pixelgrad_core::{rng, Device};
use pixelgrad_image::host::{to_tensor_values, Rgba8};
use pixelgrad_image::{Fit, Layout, PixelSpec};
use pixelgrad_webgl::glow::{self, HasContext};
use pixelgrad_webgl::{WebGlBackend, WebGlOptions};

fn backend() -> WebGlBackend {
    WebGlBackend::new_headless(WebGlOptions { self_test: false, ..Default::default() }).unwrap()
}

/// Smooth gradients plus noise, so resampling errors would show.
fn pixels(w: usize, h: usize, seed: u64) -> Vec<u8> {
    (0..w * h * 4)
        .map(|i| {
            let (p, c) = (i / 4, i % 4);
            let (x, y) = (p % w, p / w);
            let base = (x * 255 / w.max(1) + y * 97 / h.max(1) + c * 60) % 256;
            ((base as f32 + 40.0 * rng::uniform(seed, i as u64)) as usize % 256) as u8
        })
        .collect()
}

fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 2e-5 + 1e-5 * w.abs(), "{what}: element {i}: got {g}, want {w}");
    }
}

#[test]
fn from_pixels_matches_the_host_reference() {
    let b = backend();
    let dev = Device::new(b.clone());
    let (w, h) = (100usize, 60usize);
    let px = pixels(w, h, 3);
    let img = Rgba8::packed(&px, w, h).unwrap();
    // The same pixels with rows 4 pixels longer than the image (as a cropped ImageData view).
    let stride = 4 * (w + 4);
    let mut padded = vec![7u8; stride * h];
    for y in 0..h {
        padded[y * stride..y * stride + 4 * w].copy_from_slice(&px[y * 4 * w..(y + 1) * 4 * w]);
    }
    let strided = Rgba8 { pixels: &padded, width: w, height: h, stride };
    let tex = b.pixel_texture(w as u32, h as u32).unwrap();
    assert_eq!(tex.size(), (w as u32, h as u32));
    let mut n = 0;
    // (10, 60): contain pillarboxes an antialiased 6x shrink (content box starts at x > 0).
    for size in [(30, 50), (12, 20), (90, 130), (32, 32), (10, 60)] {
        for fit in [Fit::Fill, Fit::Cover, Fit::Contain] {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                for channels in [1, 3, 4] {
                    let spec = PixelSpec {
                        size: Some(size),
                        fit,
                        layout,
                        channels,
                        mean: [0.485, 0.456, 0.406, 0.5],
                        std: [0.229, 0.224, 0.225, 0.5],
                        pad: [0.5, 0.5, 0.5, 1.0],
                        ..PixelSpec::default()
                    };
                    let (want, dims, g) = to_tensor_values(img, &spec, "test").unwrap();
                    let (t, g2) = b
                        .from_pixels_texture(&dev, &tex, w as u32, h as u32, &spec, |gl| {
                            // SAFETY: the bound texture is w x h RGBA8; px holds w*h pixels.
                            unsafe {
                                gl.tex_sub_image_2d(
                                    glow::TEXTURE_2D,
                                    0,
                                    0,
                                    0,
                                    w as i32,
                                    h as i32,
                                    glow::RGBA,
                                    glow::UNSIGNED_BYTE,
                                    glow::PixelUnpackData::Slice(Some(&px)),
                                );
                            }
                            Ok(())
                        })
                        .unwrap();
                    assert_eq!((t.dims(), g2), (&dims[..], g));
                    let what = format!("texture {size:?} {fit:?} {layout:?} {channels}");
                    close(&t.to_vec().unwrap(), &want, &what);
                    let (t, _) = b.from_pixels_host(&dev, strided, &spec).unwrap();
                    close(&t.to_vec().unwrap(), &want, &format!("host {what}"));
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 5 * 3 * 2 * 3);
    // One program, compiled once, however many frames and specs.
    let (t, _) = b.from_pixels_host(&dev, img, &PixelSpec::default()).unwrap();
    assert_eq!(t.dims(), &[1, 3, h, w]);
}

#[test]
fn bad_sizes_are_errors() {
    let b = backend();
    let dev = Device::new(b.clone());
    let px = pixels(4, 4, 1);
    let img = Rgba8::packed(&px, 4, 4).unwrap();
    let zero = PixelSpec { size: Some((0, 8)), ..PixelSpec::default() };
    let e = b.from_pixels_host(&dev, img, &zero).unwrap_err().to_string();
    assert!(e.contains("zero side"), "{e}");
    let empty = Rgba8 { pixels: &[], width: 0, height: 3, stride: 0 };
    let e = b.from_pixels_host(&dev, empty, &PixelSpec::default()).unwrap_err().to_string();
    assert!(e.contains("0x3"), "{e}");
    let e = b.pixel_texture(1 << 20, 10).unwrap_err().to_string();
    assert!(e.contains("MAX_TEXTURE_SIZE"), "{e}");
    let tex = b.pixel_texture(4, 4).unwrap();
    let e = b.from_pixels_texture(&dev, &tex, 8, 8, &PixelSpec::default(), |_| Ok(())).unwrap_err().to_string();
    assert!(e.contains("not a 8x8"), "{e}");
    // A fill that fails is the call's error, and the backend stays usable.
    let e = b
        .from_pixels_texture(&dev, &tex, 4, 4, &PixelSpec::default(), |_| Err(pixelgrad_core::Error::invalid("fromPixels", "no frame")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no frame"), "{e}");
    let (t, _) = b.from_pixels_host(&dev, img, &PixelSpec { channels: 1, ..PixelSpec::default() }).unwrap();
    assert_eq!(t.dims(), &[1, 1, 4, 4]);
}

/// `floor(clamp(v * 255, 0, 255) + 0.5)` of the host reference's value `v`, and whether `v` is
/// within f32 rounding of a .5 tie (where either neighbour is right).
fn byte_of(v: f32) -> (f32, bool) {
    let s = v * 255.0;
    ((s.clamp(0.0, 255.0) + 0.5).floor(), (s - s.floor() - 0.5).abs() < 1e-3)
}

#[test]
fn uint8_pixels_match_the_host_reference() {
    let b = backend();
    let dev = Device::new(b.clone());
    let (w, h) = (37usize, 23usize);
    let px = pixels(w, h, 9);
    let img = Rgba8::packed(&px, w, h).unwrap();
    // Same size, no resampling: the bytes come back exactly (odd element counts included).
    for channels in [1, 3, 4] {
        let spec = PixelSpec { channels, ..PixelSpec::default() };
        let (t, _) = b.from_pixels_host(&dev, img, &spec).unwrap();
        let q = b.pixels_to_u8(&dev, &t).unwrap();
        assert_eq!(q.storage_dtype(), pixelgrad_core::kernel::DType::U8);
        assert_eq!(q.dims(), t.dims());
        let want = to_tensor_values(img, &spec, "test").unwrap().0;
        let got = q.to_vec().unwrap();
        for (i, (&gv, &wv)) in got.iter().zip(&want).enumerate() {
            assert_eq!(gv, byte_of(wv).0, "channels {channels}: element {i}");
        }
    }
    // Resampled: the nearest byte of the exact value.
    for (size, fit) in [((10, 16), Fit::Cover), ((50, 20), Fit::Contain), ((7, 5), Fit::Fill)] {
        let spec = PixelSpec { size: Some(size), fit, channels: 3, ..PixelSpec::default() };
        let (t, _) = b.from_pixels_host(&dev, img, &spec).unwrap();
        let got = b.pixels_to_u8(&dev, &t).unwrap().to_vec().unwrap();
        let want = to_tensor_values(img, &spec, "test").unwrap().0;
        assert_eq!(got.len(), want.len());
        for (i, (&gv, &wv)) in got.iter().zip(&want).enumerate() {
            let (byte, tie) = byte_of(wv);
            assert!(gv == byte || (tie && (gv - byte).abs() == 1.0), "{size:?} {fit:?}: element {i}: got {gv}, want {byte} ({wv})");
        }
    }
    // Only f32 tensors of this backend are packed.
    let e = b.pixels_to_u8(&dev, &pixelgrad_core::Tensor::from_u8(&dev, &[1, 2, 3], [3]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("f32"), "{e}");
}

/// `fromYUV`: I420 and NV12 planes drawn into a pixel texture by `yuv_to_rgba.glsl` and
/// preprocessed by the from_pixels pass, against the host's conversion and preprocessing.
#[test]
fn from_yuv_matches_the_host_reference() {
    let b = backend();
    let dev = Device::new(b.clone());
    let n = pixelgrad_conformance::pixels::check_from_yuv(|planes, m, spec| b.from_yuv(&dev, planes, m, spec)?.0.to_vec());
    assert_eq!(n, 24);
    // One texture reused for frames of its size and smaller.
    let tex = b.pixel_texture(40, 30).unwrap();
    let n = pixelgrad_conformance::pixels::check_from_yuv(|planes, m, spec| b.from_yuv_texture(&dev, &tex, planes, m, spec)?.0.to_vec());
    assert_eq!(n, 24);
    let small = b.pixel_texture(8, 8).unwrap();
    let e = pixelgrad_conformance::pixels::yuv_frame(13, 9, 16, 0);
    let planes = pixelgrad_image::yuv::YuvPlanes {
        format: pixelgrad_image::yuv::YuvFormat::I420,
        width: 13,
        height: 9,
        y: &e.0,
        y_stride: 16,
        u: &e.1,
        u_stride: 7,
        v: &e.2,
        v_stride: 7,
    };
    let m = pixelgrad_image::yuv::YuvMatrix::bt601(false);
    let err = b.from_yuv_texture(&dev, &small, &planes, &m, &PixelSpec::default()).unwrap_err().to_string();
    assert!(err.contains("not a 13x9"), "{err}");
}
