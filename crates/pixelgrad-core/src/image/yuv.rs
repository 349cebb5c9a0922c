//! Y'CbCr 4:2:0 frames (I420: three planes; NV12: luma plane plus interleaved CbCr) to RGB, on
//! the host. The tensor version is [`crate::composite::yuv_to_rgb`]; both use
//! [`YuvMatrix::rgb`].
//!
//! Each chroma sample covers a 2x2 block of luma samples (nearest-neighbour chroma, as
//! libyuv's I420ToARGB). Limited range: `Y' = (Y - 16) / 219`, `Cb' = (Cb - 128) / 224`; full
//! range: `Y' = Y / 255`, `Cb' = (Cb - 128) / 255`. Then `R = Y' + 2 (1 - Kr) Cr'`,
//! `B = Y' + 2 (1 - Kb) Cb'`, `G = (Y' - Kr R - Kb B) / (1 - Kr - Kb)`, clamped to `[0, 1]`.

use crate::{Error, Result};

/// How the chroma samples are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YuvFormat {
    /// Planes Y, U (Cb), V (Cr); U and V are `ceil(w / 2)` x `ceil(h / 2)`.
    I420,
    /// Plane Y, then one plane of interleaved U, V pairs.
    Nv12,
}

impl YuvFormat {
    pub fn name(&self) -> &'static str {
        match self {
            YuvFormat::I420 => "I420",
            YuvFormat::Nv12 => "NV12",
        }
    }
}

/// The colour matrix (luma weights of red and blue) and range of a Y'CbCr encoding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct YuvMatrix {
    pub kr: f64,
    pub kb: f64,
    pub full_range: bool,
}

impl YuvMatrix {
    /// ITU-R BT.601 (also SMPTE 170M, what `VideoFrame.colorSpace.matrix` calls `smpte170m`
    /// and `bt470bg`).
    pub const fn bt601(full_range: bool) -> Self {
        YuvMatrix { kr: 0.299, kb: 0.114, full_range }
    }
    /// ITU-R BT.709.
    pub const fn bt709(full_range: bool) -> Self {
        YuvMatrix { kr: 0.2126, kb: 0.0722, full_range }
    }

    /// By `VideoColorSpace.matrix` name.
    pub fn parse(matrix: &str, full_range: bool) -> Result<Self> {
        match matrix {
            "bt709" => Ok(YuvMatrix::bt709(full_range)),
            "bt470bg" | "smpte170m" | "bt601" => Ok(YuvMatrix::bt601(full_range)),
            other => {
                Err(Error::invalid("yuvToRgb", format!("colour matrix '{other}' is not supported (bt709, bt470bg, smpte170m, bt601)")))
            }
        }
    }

    /// `(y scale, y offset, chroma scale)`: `Y' = Y * a + b`, `Cb' = (Cb - 128) * c`.
    pub fn range(&self) -> (f64, f64, f64) {
        if self.full_range {
            (1.0 / 255.0, 0.0, 1.0 / 255.0)
        } else {
            (1.0 / 219.0, -16.0 / 219.0, 1.0 / 224.0)
        }
    }

    /// RGB in `[0, 1]` of 8-bit `(y, cb, cr)` sample values.
    pub fn rgb(&self, y: f64, cb: f64, cr: f64) -> [f64; 3] {
        let (a, b, c) = self.range();
        let (yp, u, v) = (y * a + b, (cb - 128.0) * c, (cr - 128.0) * c);
        let r = yp + 2.0 * (1.0 - self.kr) * v;
        let bl = yp + 2.0 * (1.0 - self.kb) * u;
        let g = (yp - self.kr * r - self.kb * bl) / (1.0 - self.kr - self.kb);
        [r, g, bl].map(|x| x.clamp(0.0, 1.0))
    }
}

/// The planes of one 4:2:0 frame (`v` is unused for NV12, whose `u` holds the pairs).
#[derive(Clone, Copy, Debug)]
pub struct YuvPlanes<'a> {
    pub format: YuvFormat,
    pub width: usize,
    pub height: usize,
    pub y: &'a [u8],
    pub y_stride: usize,
    pub u: &'a [u8],
    pub u_stride: usize,
    pub v: &'a [u8],
    pub v_stride: usize,
}

fn fits(plane: &[u8], stride: usize, row: usize, rows: usize) -> bool {
    rows == 0 || (stride >= row && (rows - 1).checked_mul(stride).and_then(|n| n.checked_add(row)).is_some_and(|n| n <= plane.len()))
}

impl YuvPlanes<'_> {
    /// Errors unless every plane holds its rows.
    pub fn check(&self, what: &str) -> Result<()> {
        let (cw, ch) = (self.width.div_ceil(2), self.height.div_ceil(2));
        let ok = fits(self.y, self.y_stride, self.width, self.height)
            && match self.format {
                YuvFormat::I420 => fits(self.u, self.u_stride, cw, ch) && fits(self.v, self.v_stride, cw, ch),
                YuvFormat::Nv12 => fits(self.u, self.u_stride, 2 * cw, ch),
            };
        if ok {
            Ok(())
        } else {
            Err(Error::invalid(what, format!("the {} planes are too small for a {}x{} frame", self.format.name(), self.width, self.height)))
        }
    }

    /// 8-bit RGBA (alpha 255), rows packed, rounded to nearest.
    pub fn to_rgba8(&self, m: &YuvMatrix, what: &str) -> Result<Vec<u8>> {
        self.check(what)?;
        let (w, h) = (self.width, self.height);
        let mut out = vec![255u8; w * h * 4];
        for yy in 0..h {
            for xx in 0..w {
                let (cx, cy) = (xx / 2, yy / 2);
                let (cb, cr) = match self.format {
                    YuvFormat::I420 => (self.u[cy * self.u_stride + cx], self.v[cy * self.v_stride + cx]),
                    YuvFormat::Nv12 => (self.u[cy * self.u_stride + 2 * cx], self.u[cy * self.u_stride + 2 * cx + 1]),
                };
                let rgb = m.rgb(self.y[yy * self.y_stride + xx] as f64, cb as f64, cr as f64);
                let o = (yy * w + xx) * 4;
                for c in 0..3 {
                    out[o + c] = (rgb[c] * 255.0).round() as u8;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_range_white_black_and_red() {
        let m = YuvMatrix::bt601(false);
        assert_eq!(m.rgb(235.0, 128.0, 128.0).map(|v| (v * 255.0).round()), [255.0; 3]);
        assert_eq!(m.rgb(16.0, 128.0, 128.0), [0.0; 3]);
        // BT.601 limited-range red: Y 81, Cb 90, Cr 240.
        let r = m.rgb(81.0, 90.0, 240.0).map(|v| (v * 255.0).round());
        assert!(r[0] >= 254.0 && r[1] <= 1.0 && r[2] <= 1.0, "{r:?}");
    }

    #[test]
    fn i420_and_nv12_give_the_same_pixels() {
        let (w, h) = (3, 3);
        let y: Vec<u8> = (0..9).map(|i| 40 + 20 * i as u8).collect();
        let u = [100u8, 150, 120, 130];
        let v = [200u8, 60, 128, 90];
        let uv: Vec<u8> = u.iter().zip(&v).flat_map(|(a, b)| [*a, *b]).collect();
        let i420 = YuvPlanes { format: YuvFormat::I420, width: w, height: h, y: &y, y_stride: 3, u: &u, u_stride: 2, v: &v, v_stride: 2 };
        let nv12 = YuvPlanes { format: YuvFormat::Nv12, u: &uv, u_stride: 4, v: &[], v_stride: 0, ..i420 };
        let m = YuvMatrix::bt709(true);
        let a = i420.to_rgba8(&m, "t").unwrap();
        assert_eq!(a, nv12.to_rgba8(&m, "t").unwrap());
        // Pixel (2, 2) uses chroma sample (1, 1).
        let want = m.rgb(y[8] as f64, 130.0, 90.0).map(|c| (c * 255.0).round() as u8);
        assert_eq!(&a[8 * 4..8 * 4 + 3], &want);
        let short = YuvPlanes { y: &y[..5], ..i420 };
        assert!(short.to_rgba8(&m, "t").unwrap_err().to_string().contains("too small"));
    }
}
