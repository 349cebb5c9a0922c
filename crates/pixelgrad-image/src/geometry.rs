//! Where each output pixel samples the source, per axis (see the module docs of
//! [`crate`]).

use super::{Antialias, Fit, PixelSpec, AUTO_ANTIALIAS_ABOVE};
use pixelgrad_core::{Error, Result};

/// One axis of the mapping from output pixels to source pixels. The GPU kernels receive these
/// fields as uniforms and compute [`Axis::taps`] themselves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    /// Source pixels on this axis.
    pub src: usize,
    /// Output pixels on this axis.
    pub out: usize,
    /// First output pixel of the content box (the rest is padding; 0 unless [`Fit::Contain`]).
    pub start: usize,
    /// Output pixels of the content box.
    pub len: usize,
    /// Source pixels per output pixel.
    pub scale: f64,
    /// Source coordinate of the content box's first edge (the crop of [`Fit::Cover`]).
    pub offset: f64,
    /// Half-width of the triangle filter, in source pixels (1: bilinear).
    pub support: f64,
}

impl Axis {
    fn new(src: usize, out: usize, start: usize, len: usize, scale: f64, offset: f64, aa: Antialias) -> Axis {
        let support = match aa {
            Antialias::Auto if scale > AUTO_ANTIALIAS_ABOVE => scale,
            Antialias::Always if scale > 1.0 => scale,
            _ => 1.0,
        };
        Axis { src, out, start, len, scale, offset, support }
    }

    /// Source coordinate sampled by content pixel `o` (half-pixel centres).
    pub fn center(&self, o: usize) -> f64 {
        (o as f64 + 0.5) * self.scale + self.offset - 0.5
    }

    /// The source pixels content pixel `o` reads and their weights (summing to 1): source
    /// pixel `j` weighs `1 - |j - c| / support` for every `j` closer than `support` to the
    /// centre `c`; indices outside the source read the nearest edge pixel.
    pub fn taps(&self, o: usize) -> Vec<(usize, f64)> {
        let c = self.center(o);
        let s = self.support;
        let j0 = (c - s).floor() as i64 + 1;
        let j1 = (c + s).ceil() as i64 - 1;
        let last = self.src as i64 - 1;
        let mut taps = Vec::with_capacity((j1 - j0 + 1).max(0) as usize);
        let mut sum = 0.0;
        for j in j0..=j1 {
            let w = 1.0 - (j as f64 - c).abs() / s;
            if w > 0.0 {
                taps.push((j.clamp(0, last) as usize, w));
                sum += w;
            }
        }
        for t in &mut taps {
            t.1 /= sum;
        }
        taps
    }

    /// Most taps any output pixel of this axis reads (a loop bound for the kernels).
    pub fn max_taps(&self) -> usize {
        2 * self.support.ceil() as usize + 1
    }

    /// The `[len, src]` interpolation matrix of the content box (row `o` holds the weights of
    /// content pixel `o`), row-major, in f64.
    pub fn matrix(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.len * self.src];
        for o in 0..self.len {
            for (j, w) in self.taps(o) {
                m[o * self.src + j] += w;
            }
        }
        m
    }
}

/// Both axes of an image's mapping onto a model input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    pub x: Axis,
    pub y: Axis,
}

impl Geometry {
    /// The mapping of a `src_w` x `src_h` source under `spec` (which must pass
    /// [`PixelSpec::validate`]). `what` names the caller in errors.
    pub fn new(src_w: usize, src_h: usize, spec: &PixelSpec, what: &str) -> Result<Geometry> {
        if src_w == 0 || src_h == 0 {
            return Err(Error::invalid(
                what,
                format!("the source is {src_w}x{src_h} pixels (a video with no frame yet, or an image that has not loaded?)"),
            ));
        }
        spec.validate(what)?;
        let (oh, ow) = spec.size.unwrap_or((src_h, src_w));
        let (sw, sh) = (src_w as f64, src_h as f64);
        let aa = spec.antialias;
        Ok(match spec.fit {
            Fit::Fill => Geometry {
                x: Axis::new(src_w, ow, 0, ow, sw / ow as f64, 0.0, aa),
                y: Axis::new(src_h, oh, 0, oh, sh / oh as f64, 0.0, aa),
            },
            Fit::Cover => {
                let f = (sw / ow as f64).min(sh / oh as f64);
                Geometry {
                    x: Axis::new(src_w, ow, 0, ow, f, (sw - ow as f64 * f) / 2.0, aa),
                    y: Axis::new(src_h, oh, 0, oh, f, (sh - oh as f64 * f) / 2.0, aa),
                }
            }
            Fit::Contain => {
                let f = (sw / ow as f64).max(sh / oh as f64);
                let side = |src: f64, out: usize| ((src / f).round() as usize).clamp(1, out);
                let (lw, lh) = (side(sw, ow), side(sh, oh));
                Geometry {
                    x: Axis::new(src_w, ow, (ow - lw) / 2, lw, sw / lw as f64, 0.0, aa),
                    y: Axis::new(src_h, oh, (oh - lh) / 2, lh, sh / lh as f64, 0.0, aa),
                }
            }
        })
    }

    /// True if output pixel `(oy, ox)` lies inside the content box.
    pub fn inside(&self, oy: usize, ox: usize) -> bool {
        (self.y.start..self.y.start + self.y.len).contains(&oy) && (self.x.start..self.x.start + self.x.len).contains(&ox)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PixelSpec;

    fn spec(h: usize, w: usize, fit: Fit) -> PixelSpec {
        PixelSpec { size: Some((h, w)), fit, ..PixelSpec::default() }
    }

    #[test]
    fn bilinear_taps_match_onnx_half_pixel() {
        // 4 -> 2: centres at 0.5 and 2.5, two equal taps each.
        let g = Geometry::new(4, 1, &spec(1, 2, Fit::Fill), "t").unwrap();
        assert_eq!(g.x.support, 1.0);
        assert_eq!(g.x.taps(0), vec![(0, 0.5), (1, 0.5)]);
        assert_eq!(g.x.taps(1), vec![(2, 0.5), (3, 0.5)]);
        // 2 -> 4 (upsampling): centres -0.25, 0.25, 0.75, 1.25; the edges read pixel 0 / 1.
        let g = Geometry::new(2, 1, &spec(1, 4, Fit::Fill), "t").unwrap();
        let t = g.x.taps(0);
        assert_eq!(t.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 0]);
        assert_eq!(g.x.taps(1), vec![(0, 0.75), (1, 0.25)]);
        // Same size: identity.
        let g = Geometry::new(5, 3, &PixelSpec::default(), "t").unwrap();
        assert_eq!(g.x.taps(3), vec![(3, 1.0)]);
    }

    #[test]
    fn antialias_stretches_the_filter_above_2x_only() {
        let g2 = Geometry::new(20, 20, &spec(10, 10, Fit::Fill), "t").unwrap();
        assert_eq!(g2.x.support, 1.0);
        let g5 = Geometry::new(50, 50, &spec(10, 10, Fit::Fill), "t").unwrap();
        assert_eq!(g5.x.support, 5.0);
        let t = g5.x.taps(3); // centre 17
        assert_eq!(t.len(), 9);
        assert!((t.iter().map(|p| p.1).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(t[4].0, 17);
        let never = PixelSpec { antialias: Antialias::Never, ..spec(10, 10, Fit::Fill) };
        assert_eq!(Geometry::new(50, 50, &never, "t").unwrap().x.support, 1.0);
        let always = PixelSpec { antialias: Antialias::Always, ..spec(10, 10, Fit::Fill) };
        assert_eq!(Geometry::new(20, 20, &always, "t").unwrap().x.support, 2.0);
        assert!(g5.x.max_taps() >= t.len());
    }

    #[test]
    fn cover_crops_and_contain_letterboxes() {
        // 200x100 into 50x50: cover keeps the middle 100x100, contain puts 50x25 in the middle.
        let c = Geometry::new(200, 100, &spec(50, 50, Fit::Cover), "t").unwrap();
        assert_eq!((c.x.scale, c.x.offset, c.y.offset), (2.0, 50.0, 0.0));
        let k = Geometry::new(200, 100, &spec(50, 50, Fit::Contain), "t").unwrap();
        assert_eq!((k.x.start, k.x.len, k.y.start, k.y.len), (0, 50, 12, 25));
        assert_eq!((k.x.scale, k.y.scale), (4.0, 4.0));
        assert!(k.inside(12, 0) && !k.inside(11, 0) && !k.inside(37, 0));
    }

    #[test]
    fn bad_sources_and_specs_are_errors() {
        let e = Geometry::new(0, 10, &PixelSpec::default(), "fromPixels").unwrap_err().to_string();
        assert!(e.contains("0x10"), "{e}");
        let e = Geometry::new(4, 4, &spec(0, 4, Fit::Fill), "fromPixels").unwrap_err().to_string();
        assert!(e.contains("zero side"), "{e}");
        let bad = PixelSpec { std: [0.0; 4], ..PixelSpec::default() };
        assert!(Geometry::new(4, 4, &bad, "x").unwrap_err().to_string().contains("std[0]"));
        let bad = PixelSpec { channels: 2, ..PixelSpec::default() };
        assert!(Geometry::new(4, 4, &bad, "x").unwrap_err().to_string().contains("channels"));
    }
}
