//! Single images: PNG to grey `[0, 1]`, inversion, resizing.
//!
//! The usual path from a user's drawing to a model trained on MNIST is
//! `load_png_gray` → `auto_invert` (drawings are dark on white, MNIST is white on black) →
//! `resize_bilinear` to 28x28.

use std::path::Path;

use crate::error::{display_name, invalid, io_err, DataError, Result};

/// Loads a PNG as grey values in `[0, 1]`, returning `(pixels, width, height)` with pixels
/// row-major.
///
/// Every PNG colour type and bit depth is accepted: palettes and low bit depths are expanded,
/// 16-bit samples keep their precision, colour is converted with the Rec. 601 luma weights
/// (`0.299 R + 0.587 G + 0.114 B`, on the stored, gamma-encoded values, as MNIST-style tools
/// do). **Transparency is composited on white**: a digit drawn on a transparent canvas comes
/// out dark on white, the same as one drawn on a white canvas, so [`auto_invert`] handles
/// both the same way.
pub fn load_png_gray(path: impl AsRef<Path>) -> Result<(Vec<f32>, usize, usize)> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| io_err(path, e))?;
    decode_png_gray(&bytes, &display_name(path))
}

/// Most pixels a PNG may have (2^25, e.g. 5792 x 5792): the decode buffer is sized from the
/// header before any data is read.
pub const MAX_PNG_PIXELS: u64 = 1 << 25;

/// One decoded frame of a PNG: the buffer and what it holds. The header's size is checked
/// against [`MAX_PNG_PIXELS`] before the buffer is allocated: a 100-byte file may claim a huge
/// image (found by fuzzing: an 8 GB allocation). Every PNG decoder of the crate reads through
/// here.
fn read_frame(
    bytes: &[u8],
    file: &str,
    transformations: png::Transformations,
) -> Result<(Vec<u8>, png::OutputInfo)> {
    let png_err = |e: png::DecodingError| DataError::Png {
        file: file.into(),
        detail: e.to_string(),
    };
    let mut decoder = png::Decoder::new(bytes);
    decoder.set_transformations(transformations);
    let mut reader = decoder.read_info().map_err(png_err)?;
    // Both sides are below 2^31 (the format's limit), so the product fits in u64.
    let (hw, hh) = (reader.info().width as u64, reader.info().height as u64);
    if hw * hh > MAX_PNG_PIXELS {
        return Err(DataError::Png {
            file: file.into(),
            detail: format!("{hw}x{hh} pixels is more than the {MAX_PNG_PIXELS} this loader accepts"),
        });
    }
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(png_err)?;
    if info.color_type == png::ColorType::Indexed {
        // EXPAND removes palettes; reaching here means the decoder changed behaviour.
        return Err(DataError::Png {
            file: file.into(),
            detail: "indexed colour was not expanded".into(),
        });
    }
    let channels = channels_of(&info);
    let bytes_per_sample = if info.bit_depth == png::BitDepth::Sixteen { 2 } else { 1 };
    let (w, h) = (info.width as usize, info.height as usize);
    // Every row must hold its pixels (checked once here, so the readers index freely).
    let row = w * channels * bytes_per_sample;
    if h > 0 && ((h - 1) * info.line_size + row > buf.len() || row > info.line_size) {
        return Err(DataError::Png {
            file: file.into(),
            detail: format!("decoded rows are shorter than {w} pixels"),
        });
    }
    Ok((buf, info))
}

/// Samples per pixel of a decoded frame (palettes are expanded before this is asked).
fn channels_of(info: &png::OutputInfo) -> usize {
    match info.color_type {
        png::ColorType::Grayscale | png::ColorType::Indexed => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
    }
}

/// A PNG as 8-bit RGBA, row-major: `(pixels, width, height)` with `4 * width * height`
/// bytes. Grey, grey+alpha and RGB are expanded (alpha 255 where the file has none), palettes
/// and low bit depths are expanded, 16-bit samples keep their high byte. What `pixelgrad run`
/// feeds to a model for a `NAME=photo.png` input; capped at [`MAX_PNG_PIXELS`] like
/// [`decode_png_gray`]. `file` names the source in errors.
pub fn decode_png_rgba8(bytes: &[u8], file: &str) -> Result<(Vec<u8>, usize, usize)> {
    let (buf, info) = read_frame(
        bytes,
        file,
        png::Transformations::EXPAND | png::Transformations::STRIP_16,
    )?;
    let (w, h) = (info.width as usize, info.height as usize);
    let ch = channels_of(&info);
    let mut out = Vec::with_capacity(4 * w * h);
    for y in 0..h {
        let row = &buf[y * info.line_size..y * info.line_size + w * ch];
        for p in row.chunks_exact(ch) {
            let px = match ch {
                1 => [p[0], p[0], p[0], 255],
                2 => [p[0], p[0], p[0], p[1]],
                3 => [p[0], p[1], p[2], 255],
                _ => [p[0], p[1], p[2], p[3]],
            };
            out.extend_from_slice(&px);
        }
    }
    Ok((out, w, h))
}

/// [`load_png_gray`] on bytes already in memory; `file` names the source in errors.
pub fn decode_png_gray(bytes: &[u8], file: &str) -> Result<(Vec<f32>, usize, usize)> {
    // EXPAND: palette -> RGB(A), 1/2/4-bit grey -> 8-bit, tRNS chunk -> alpha channel.
    let (buf, info) = read_frame(bytes, file, png::Transformations::EXPAND)?;
    let (w, h) = (info.width as usize, info.height as usize);
    let channels = channels_of(&info);
    let sixteen = info.bit_depth == png::BitDepth::Sixteen;
    let (bytes_per_sample, max) = if sixteen { (2, 65535.0) } else { (1, 255.0) };
    let sample = |row: &[u8], k: usize| -> f32 {
        let v = if sixteen {
            u16::from_be_bytes([row[2 * k], row[2 * k + 1]])
        } else {
            u16::from(row[k])
        };
        f32::from(v) / max
    };
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        let start = y * info.line_size;
        let row = &buf[start..start + w * channels * bytes_per_sample];
        for x in 0..w {
            let k = x * channels;
            let (grey, alpha) = match channels {
                1 => (sample(row, k), 1.0),
                2 => (sample(row, k), sample(row, k + 1)),
                3 => (
                    luma(sample(row, k), sample(row, k + 1), sample(row, k + 2)),
                    1.0,
                ),
                _ => (
                    luma(sample(row, k), sample(row, k + 1), sample(row, k + 2)),
                    sample(row, k + 3),
                ),
            };
            // Composite on white: transparent pixels become background (1.0).
            out.push(grey * alpha + (1.0 - alpha));
        }
    }
    Ok((out, w, h))
}

fn luma(r: f32, g: f32, b: f32) -> f32 {
    0.299 * r + 0.587 * g + 0.114 * b
}

/// Replaces every value `v` (in `[0, 1]`) with `1 - v`.
pub fn invert(pixels: &mut [f32]) {
    pixels.iter_mut().for_each(|v| *v = 1.0 - *v);
}

/// Inverts the image when its border is bright, so the result is light strokes on a dark
/// background like MNIST. Heuristic: the mean of the outermost ring of pixels (first and last
/// row and column) above 0.5 means a light background. Returns whether it inverted.
pub fn auto_invert(pixels: &mut [f32], w: usize, h: usize) -> Result<bool> {
    check_dims("auto_invert", pixels.len(), w, h)?;
    let mut sum = 0.0f64;
    let mut count = 0usize;
    for y in 0..h {
        for x in 0..w {
            if y == 0 || y + 1 == h || x == 0 || x + 1 == w {
                sum += f64::from(pixels[y * w + x]);
                count += 1;
            }
        }
    }
    let bright = sum / count as f64 > 0.5;
    if bright {
        invert(pixels);
    }
    Ok(bright)
}

fn check_dims(func: &'static str, len: usize, w: usize, h: usize) -> Result<()> {
    if w == 0 || h == 0 || w.checked_mul(h) != Some(len) {
        return Err(invalid(
            func,
            format!("{len} pixels do not form a {w}x{h} image"),
        ));
    }
    Ok(())
}

/// Resizes a grey image (row-major, `w x h`) to `new_w x new_h`.
///
/// Method: separable bilinear (triangle) filter on pixel centres (`align_corners = false`).
/// When shrinking, the triangle is widened by the shrink factor, so every source pixel
/// contributes and a 280x280 drawing becomes a smooth 28x28 digit instead of an aliased
/// sample of every tenth pixel (the "antialiased bilinear" of Pillow). When enlarging it is
/// plain bilinear interpolation with edge clamping. Weights sum to 1, so a constant image stays
/// constant and values stay within the input range.
pub fn resize_bilinear(
    pixels: &[f32],
    w: usize,
    h: usize,
    new_w: usize,
    new_h: usize,
) -> Result<Vec<f32>> {
    check_dims("resize_bilinear", pixels.len(), w, h)?;
    if new_w == 0 || new_h == 0 {
        return Err(invalid(
            "resize_bilinear",
            format!("target size {new_w}x{new_h} is empty"),
        ));
    }
    let cols = filter_taps(w, new_w);
    let rows = filter_taps(h, new_h);
    // Horizontal pass: h x new_w.
    let mut tmp = vec![0.0f32; h * new_w];
    for y in 0..h {
        let src = &pixels[y * w..(y + 1) * w];
        for (x, tap) in cols.iter().enumerate() {
            tmp[y * new_w + x] = tap
                .weights
                .iter()
                .enumerate()
                .map(|(k, &wt)| wt * src[tap.start + k])
                .sum();
        }
    }
    // Vertical pass: new_h x new_w.
    let mut out = vec![0.0f32; new_h * new_w];
    for (y, tap) in rows.iter().enumerate() {
        for (k, &wt) in tap.weights.iter().enumerate() {
            let src = &tmp[(tap.start + k) * new_w..(tap.start + k + 1) * new_w];
            for (o, &s) in out[y * new_w..(y + 1) * new_w].iter_mut().zip(src) {
                *o += wt * s;
            }
        }
    }
    Ok(out)
}

/// Source pixels `start..start + weights.len()` and their weights for one output pixel.
struct Taps {
    start: usize,
    weights: Vec<f32>,
}

/// Triangle-filter taps mapping `src` pixels onto `dst` pixels along one axis.
fn filter_taps(src: usize, dst: usize) -> Vec<Taps> {
    let scale = src as f64 / dst as f64;
    let radius = scale.max(1.0); // widen the triangle when shrinking
    (0..dst)
        .map(|i| {
            let center = (i as f64 + 0.5) * scale; // in source pixel units
            let lo = ((center - radius).floor().max(0.0) as usize).min(src - 1);
            let hi = ((center + radius).ceil() as usize).clamp(lo + 1, src);
            let mut weights: Vec<f64> = (lo..hi)
                .map(|j| (1.0 - ((j as f64 + 0.5 - center) / radius).abs()).max(0.0))
                .collect();
            let sum: f64 = weights.iter().sum();
            if sum > 0.0 {
                weights.iter_mut().for_each(|v| *v /= sum);
            } else {
                // Cannot happen for src >= 1, but keep the output defined: nearest pixel.
                weights.iter_mut().for_each(|v| *v = 0.0);
                weights[0] = 1.0;
            }
            Taps {
                start: lo,
                weights: weights.into_iter().map(|v| v as f32).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {

    /// Found by `scripts/fuzz.sh png`: an 88-byte file whose header claims a huge image made
    /// the decoder allocate 8 GB before reading any data.
    /// (The fuzzer's input, kept in `fuzz/regressions/png/`, has a CRC only fuzzing builds of
    /// the png crate ignore; this one is a valid header claiming 100000 x 100000 pixels.)
    #[test]
    fn a_header_claiming_a_huge_image_is_refused_before_allocating() {
        let bytes = crate::png_claiming(100_000, 100_000, 0); // 8-bit grey
        let e = decode_png_gray(&bytes, "huge.png").unwrap_err().to_string();
        assert!(e.contains("huge.png") && e.contains("100000x100000") && e.contains("more than"), "{e}");
        // the fuzzer's file: an error too, without the allocation
        assert!(decode_png_gray(include_bytes!("../../../fuzz/regressions/png/huge_header_dimensions_oom"), "f.png").is_err());
    }
    use super::*;

    #[test]
    fn resize_constant_and_mean() {
        let img = vec![0.25f32; 30 * 20];
        for (nw, nh) in [(7, 5), (28, 28), (60, 41), (1, 1)] {
            let r = resize_bilinear(&img, 30, 20, nw, nh).unwrap();
            assert_eq!(r.len(), nw * nh);
            assert!(r.iter().all(|&v| (v - 0.25).abs() < 1e-6));
        }
        // Halving a 2x2 checker block pattern averages it.
        let img = [1.0, 0.0, 0.0, 1.0];
        let r = resize_bilinear(&img, 2, 2, 1, 1).unwrap();
        assert!((r[0] - 0.5).abs() < 1e-6);
        assert!(resize_bilinear(&img, 3, 2, 1, 1).is_err());
    }

    #[test]
    fn upscale_interpolates_between_pixels() {
        let r = resize_bilinear(&[0.0, 1.0], 2, 1, 4, 1).unwrap();
        assert_eq!(r, vec![0.0, 0.25, 0.75, 1.0]);
    }

    #[test]
    fn auto_invert_flips_white_background() {
        let mut img = vec![1.0f32; 9];
        img[4] = 0.0;
        assert!(auto_invert(&mut img, 3, 3).unwrap());
        assert_eq!(img[4], 1.0);
        assert_eq!(img[0], 0.0);
        assert!(!auto_invert(&mut img, 3, 3).unwrap());
    }
}
