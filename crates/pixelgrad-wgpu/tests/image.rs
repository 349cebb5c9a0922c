//! `fromPixels` on WebGPU (lavapipe): the from_pixels kernel against the host reference
//! `pixelgrad_image::host`, through a texture (as `copyExternalImageToTexture` fills it
//! in the browser) and from host pixels, for every fit, both layouts, 1/3/4 channels and 2x
//! and 5x downscales; then the post-processing composites on the device.

mod common;

use std::rc::Rc;

use common::*;
use pixelgrad_core::{rng, Device};
use pixelgrad_image::host::{to_tensor_values, Rgba8};
use pixelgrad_image::{Fit, Layout, PixelSpec};

fn pixels(w: usize, h: usize, seed: u64) -> Vec<u8> {
    // smooth gradients plus noise, so resampling errors would show
    (0..w * h * 4)
        .map(|i| {
            let (p, c) = (i / 4, i % 4);
            let (x, y) = (p % w, p / w);
            let base = (x * 255 / w.max(1) + y * 97 / h.max(1) + c * 60) % 256;
            ((base as f32 + 40.0 * rng::uniform(seed, i as u64)) as usize % 256) as u8
        })
        .collect()
}

#[test]
fn from_pixels_matches_the_host_reference() {
    let b = Rc::new(backend());
    let dev = Device::from_rc(b.clone());
    let (w, h) = (100usize, 60usize);
    let px = pixels(w, h, 3);
    let img = Rgba8::packed(&px, w, h).unwrap();
    let tex = b.pixel_texture(w as u32, h as u32).unwrap();
    let mut n = 0;
    // 2x and 5x down (the latter antialiased), an upscale, and an aspect change.
    for size in [(30, 50), (12, 20), (90, 130), (32, 32)] {
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
                    let want: Vec<f64> = want.iter().map(|&v| v as f64).collect();
                    let (t, g2) = b
                        .from_pixels_texture(&dev, &tex, w as u32, h as u32, &spec, |q, t| {
                            q.write_texture(
                                t.as_image_copy(),
                                &px,
                                wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(4 * w as u32), rows_per_image: None },
                                wgpu::Extent3d { width: w as u32, height: h as u32, depth_or_array_layers: 1 },
                            );
                            Ok(())
                        })
                        .unwrap();
                    assert_eq!((t.dims(), g2), (&dims[..], g));
                    let what = format!("texture {size:?} {fit:?} {layout:?} {channels}");
                    close(&t.to_vec().unwrap(), &want, 1e-5, 2e-5, &what);
                    let (t, _) = b.from_pixels_host(&dev, img, &spec).unwrap();
                    close(&t.to_vec().unwrap(), &want, 1e-5, 2e-5, &format!("host {what}"));
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 4 * 3 * 2 * 3);
}

#[test]
fn bad_sizes_are_errors() {
    let b = Rc::new(backend());
    let dev = Device::from_rc(b.clone());
    let px = pixels(4, 4, 1);
    let img = Rgba8::packed(&px, 4, 4).unwrap();
    let zero = PixelSpec { size: Some((0, 8)), ..PixelSpec::default() };
    let e = b.from_pixels_host(&dev, img, &zero).unwrap_err().to_string();
    assert!(e.contains("zero side"), "{e}");
    let e = b.pixel_texture(0, 10).unwrap_err().to_string();
    assert!(e.contains("0x10"), "{e}");
    let e = b.pixel_texture(1 << 20, 10).unwrap_err().to_string();
    assert!(e.contains("maxTextureDimension2D"), "{e}");
    let tex = b.pixel_texture(4, 4).unwrap();
    let e = b.from_pixels_texture(&dev, &tex, 8, 8, &PixelSpec::default(), |_, _| Ok(())).unwrap_err().to_string();
    assert!(e.contains("not a 8x8"), "{e}");
}

/// `fromYUV`: I420 and NV12 planes converted by `yuv_to_rgba.wgsl` and preprocessed by
/// `from_pixels.wgsl`, against the host's conversion and preprocessing.
#[test]
fn from_yuv_matches_the_host_reference() {
    let b = Rc::new(backend());
    let dev = Device::from_rc(b.clone());
    let n = pixelgrad_conformance::pixels::check_from_yuv(|planes, m, spec| b.from_yuv(&dev, planes, m, spec)?.0.to_vec());
    assert_eq!(n, 24);
    let y = [16u8; 4];
    let short = pixelgrad_image::yuv::YuvPlanes {
        format: pixelgrad_image::yuv::YuvFormat::I420,
        width: 2,
        height: 2,
        y: &y,
        y_stride: 2,
        u: &[],
        u_stride: 1,
        v: &[],
        v_stride: 1,
    };
    let e = b.from_yuv(&dev, &short, &pixelgrad_image::yuv::YuvMatrix::bt601(false), &PixelSpec::default()).unwrap_err().to_string();
    assert!(e.contains("too small"), "{e}");
}
