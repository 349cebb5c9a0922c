//! The reference implementation on the host: 8-bit RGBA pixels to model-input values in plain
//! f64 loops (the CPU backend's `fromPixels`, and the oracle of the GPU kernels' tests).

use super::{Geometry, Layout, PixelSpec, LUMA};
use pixelgrad_core::{Error, Result};

/// 8-bit RGBA pixels, rows top to bottom, `stride` bytes apart (at least `4 * width`).
#[derive(Clone, Copy, Debug)]
pub struct Rgba8<'a> {
    pub pixels: &'a [u8],
    pub width: usize,
    pub height: usize,
    pub stride: usize,
}

impl<'a> Rgba8<'a> {
    /// Tightly packed rows (`stride = 4 * width`); an error if `pixels` is too short.
    pub fn packed(pixels: &'a [u8], width: usize, height: usize) -> Result<Self> {
        let img = Rgba8 { pixels, width, height, stride: 4 * width };
        img.check("image")?;
        Ok(img)
    }

    /// Errors unless every row fits in `pixels`.
    pub fn check(&self, what: &str) -> Result<()> {
        let need = match self.height {
            0 => Some(0),
            h => (h - 1).checked_mul(self.stride).and_then(|n| n.checked_add(4 * self.width)),
        };
        if self.stride < 4 * self.width || need.is_none_or(|n| n > self.pixels.len()) {
            return Err(Error::invalid(
                what,
                format!(
                    "{} bytes do not hold {}x{} RGBA pixels with rows {} bytes apart",
                    self.pixels.len(),
                    self.width,
                    self.height,
                    self.stride
                ),
            ));
        }
        Ok(())
    }

    fn at(&self, x: usize, y: usize, c: usize) -> f64 {
        self.pixels[y * self.stride + 4 * x + c] as f64 / 255.0
    }
}

/// The model input for `img` under `spec`: the values (row-major in the spec's layout), their
/// shape and the geometry used. `what` names the caller in errors.
pub fn to_tensor_values(img: Rgba8<'_>, spec: &PixelSpec, what: &str) -> Result<(Vec<f32>, [usize; 4], Geometry)> {
    img.check(what)?;
    let g = Geometry::new(img.width, img.height, spec, what)?;
    let dims = spec.out_dims(&g);
    let (oh, ow, ch) = (g.y.out, g.x.out, spec.channels);
    let xt: Vec<Vec<(usize, f64)>> = (0..g.x.len).map(|o| g.x.taps(o)).collect();
    let yt: Vec<Vec<(usize, f64)>> = (0..g.y.len).map(|o| g.y.taps(o)).collect();
    let norm = |c: usize, v: f64| ((v - spec.mean[c] as f64) / spec.std[c] as f64) as f32;
    let mut out = vec![0f32; oh * ow * ch];
    let mut put = |oy: usize, ox: usize, c: usize, v: f32| {
        let i = match spec.layout {
            Layout::Nchw => (c * oh + oy) * ow + ox,
            Layout::Nhwc => (oy * ow + ox) * ch + c,
        };
        out[i] = v;
    };
    for oy in 0..oh {
        for ox in 0..ow {
            if !g.inside(oy, ox) {
                for c in 0..ch {
                    put(oy, ox, c, norm(c, spec.pad[c] as f64));
                }
                continue;
            }
            let mut rgba = [0f64; 4];
            for &(sy, wy) in &yt[oy - g.y.start] {
                for &(sx, wx) in &xt[ox - g.x.start] {
                    for (c, acc) in rgba.iter_mut().enumerate() {
                        *acc += wy * wx * img.at(sx, sy, c);
                    }
                }
            }
            if ch == 1 {
                let y: f64 = (0..3).map(|c| LUMA[c] as f64 * rgba[c]).sum();
                put(oy, ox, 0, norm(0, y));
            } else {
                for (c, &v) in rgba.iter().enumerate().take(ch) {
                    put(oy, ox, c, norm(c, v));
                }
            }
        }
    }
    Ok((out, dims, g))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fit, Layout};

    #[test]
    fn two_by_two_to_one_pixel_is_the_mean_and_layouts_agree() {
        let px = [0u8, 10, 20, 255, 40, 50, 60, 255, 80, 90, 100, 255, 120, 130, 140, 255];
        let img = Rgba8::packed(&px, 2, 2).unwrap();
        let spec = PixelSpec { size: Some((1, 1)), ..PixelSpec::default() };
        let (v, d, _) = to_tensor_values(img, &spec, "t").unwrap();
        assert_eq!(d, [1, 3, 1, 1]);
        for (c, want) in [60.0, 70.0, 80.0].iter().enumerate() {
            assert!((v[c] as f64 - want / 255.0).abs() < 1e-7, "{v:?}");
        }
        // 2x2 kept, NCHW vs NHWC are transposes of each other.
        let a = to_tensor_values(img, &PixelSpec::default(), "t").unwrap().0;
        let b = to_tensor_values(img, &PixelSpec { layout: Layout::Nhwc, ..PixelSpec::default() }, "t").unwrap().0;
        for c in 0..3 {
            for p in 0..4 {
                assert_eq!(a[c * 4 + p], b[p * 3 + c]);
            }
        }
    }

    #[test]
    fn normalisation_luma_and_padding() {
        let px = [255u8, 0, 0, 255, 255, 0, 0, 255];
        let img = Rgba8::packed(&px, 2, 1).unwrap();
        let spec = PixelSpec {
            size: Some((2, 2)),
            fit: Fit::Contain,
            channels: 1,
            mean: [0.5, 0.0, 0.0, 0.0],
            std: [0.5, 1.0, 1.0, 1.0],
            ..PixelSpec::default()
        };
        let (v, d, g) = to_tensor_values(img, &spec, "t").unwrap();
        assert_eq!(d, [1, 1, 2, 2]);
        assert_eq!((g.y.start, g.y.len), (0, 1));
        // Row 0: red's luma 0.299 normalised; row 1: padding 0 normalised = -1.
        assert!((v[0] - (0.299 - 0.5) / 0.5).abs() < 1e-6);
        assert_eq!(v[2], -1.0);
    }

    #[test]
    fn short_buffers_are_errors() {
        let px = [0u8; 15];
        assert!(Rgba8::packed(&px, 2, 2).unwrap_err().to_string().contains("15 bytes"));
    }
}
