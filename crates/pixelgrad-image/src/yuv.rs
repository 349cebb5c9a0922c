//! Y'CbCr 4:2:0 frames (I420: three planes; NV12: luma plane plus interleaved CbCr) to RGB, on
//! the host. The tensor version is [`crate::yuv_to_rgb`]; both use
//! [`YuvMatrix::rgb`].
//!
//! Each chroma sample covers a 2x2 block of luma samples (nearest-neighbour chroma, as
//! libyuv's I420ToARGB). Limited range: `Y' = (Y - 16) / 219`, `Cb' = (Cb - 128) / 224`; full
//! range: `Y' = Y / 255`, `Cb' = (Cb - 128) / 255`. Then `R = Y' + 2 (1 - Kr) Cr'`,
//! `B = Y' + 2 (1 - Kb) Cb'`, `G = (Y' - Kr R - Kb B) / (1 - Kr - Kb)`, clamped to `[0, 1]`.

use pixelgrad_core::{Error, Result};

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

    /// 8-bit RGBA (alpha 255), rows packed: each channel `floor(v * 255 + 0.5)` of
    /// [`YuvMatrix::rgb`]'s `v` (the nearest byte, ties up), as the GPU kernels round. The same
    /// operations in the same order as `rgb`, with the per-luma and per-chroma terms computed
    /// once (a test checks every pixel against `rgb`).
    pub fn to_rgba8(&self, m: &YuvMatrix, what: &str) -> Result<Vec<u8>> {
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 {
            self.check(what)?;
            return Ok(Vec::new());
        }
        let nv12 = self.to_nv12(what)?;
        let (luma, chroma) = nv12.split_at(w * h);
        let cw = w.div_ceil(2);
        let mut out = vec![255u8; w * h * 4];
        // YuvMatrix::rgb's operations in its order, with the per-sample terms computed once:
        // Y' per luma value, the chroma terms per pair (the same values, so the same bytes).
        let (a, b, c) = m.range();
        let luma_of: Vec<f64> = (0..=255u8).map(|y| f64::from(y) * a + b).collect();
        let (kr, kb) = (m.kr, m.kb);
        let (rk, bk, gd) = (2.0 * (1.0 - kr), 2.0 * (1.0 - kb), 1.0 - kr - kb);
        let byte = |v: f64| (v.clamp(0.0, 1.0) * 255.0 + 0.5).floor() as u8;
        let mut terms = vec![(0.0, 0.0); cw];
        for (yy, (row, dst)) in luma.chunks_exact(w).zip(out.chunks_exact_mut(4 * w)).enumerate() {
            if yy % 2 == 0 {
                let pairs = &chroma[(yy / 2) * 2 * cw..][..2 * cw];
                for (t, p) in terms.iter_mut().zip(pairs.chunks_exact(2)) {
                    let (u, v) = ((f64::from(p[0]) - 128.0) * c, (f64::from(p[1]) - 128.0) * c);
                    *t = (rk * v, bk * u);
                }
            }
            for (xx, (&l, px)) in row.iter().zip(dst.chunks_exact_mut(4)).enumerate() {
                let (rv, bu) = terms[xx / 2];
                let yp = luma_of[usize::from(l)];
                let (r, bl) = (yp + rv, yp + bu);
                let g = (yp - kr * r - kb * bl) / gd;
                px[0] = byte(r);
                px[1] = byte(g);
                px[2] = byte(bl);
            }
        }
        Ok(out)
    }
}

/// `rows` rows of `row` bytes, `stride` apart, appended to `out`.
fn pack_rows(out: &mut Vec<u8>, plane: &[u8], stride: usize, rows: usize, row: usize) {
    for r in 0..rows {
        out.extend_from_slice(&plane[r * stride..r * stride + row]);
    }
}

impl YuvPlanes<'_> {
    /// The frame as packed NV12, the one layout the GPU backends' conversion kernels read
    /// (`pixelgrad-wgpu`'s `yuv_to_rgba.wgsl`, `pixelgrad-webgl`'s `yuv_to_rgba.glsl`): the
    /// luma rows without padding (`width` bytes each, from byte 0), then the chroma as
    /// interleaved (Cb, Cr) pairs, `ceil(width / 2)` pairs a row, from byte `width * height`.
    /// I420's two planes are interleaved here. Errors as [`YuvPlanes::check`] does, and for an
    /// empty frame.
    pub fn to_nv12(&self, what: &str) -> Result<Vec<u8>> {
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 {
            return Err(Error::invalid(what, format!("the frame is {w}x{h} pixels; it has nothing to convert")));
        }
        self.check(what)?;
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let mut bytes = Vec::with_capacity(w * h + 2 * cw * ch);
        pack_rows(&mut bytes, self.y, self.y_stride, h, w);
        match self.format {
            YuvFormat::I420 => {
                for r in 0..ch {
                    let u = &self.u[r * self.u_stride..r * self.u_stride + cw];
                    let v = &self.v[r * self.v_stride..r * self.v_stride + cw];
                    bytes.extend(u.iter().zip(v).flat_map(|(&a, &b)| [a, b]));
                }
            }
            YuvFormat::Nv12 => pack_rows(&mut bytes, self.u, self.u_stride, ch, 2 * cw),
        }
        Ok(bytes)
    }
}

impl YuvMatrix {
    /// The conversion's constants for the GPU kernels, as f32: `[a, b, c, kr, kb]` with
    /// `(a, b, c)` from [`YuvMatrix::range`]. The kernels compute [`YuvMatrix::rgb`]'s formula
    /// with them in f32 and round like [`YuvPlanes::to_rgba8`], so a byte can differ from the
    /// host's (f64) only where the exact value lies within f32 rounding of a half step.
    pub fn constants(&self) -> [f32; 5] {
        let (a, b, c) = self.range();
        [a as f32, b as f32, c as f32, self.kr as f32, self.kb as f32]
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

    #[test]
    fn nv12_packing_drops_the_row_padding_and_interleaves_i420() {
        let (w, h) = (3, 3);
        // Luma rows 4 bytes apart (one byte of padding, 99), chroma rows 3 apart.
        let y: Vec<u8> = vec![1, 2, 3, 99, 4, 5, 6, 99, 7, 8, 9];
        let u = [10u8, 11, 99, 12, 13];
        let v = [20u8, 21, 99, 22, 23];
        let i420 = YuvPlanes { format: YuvFormat::I420, width: w, height: h, y: &y, y_stride: 4, u: &u, u_stride: 3, v: &v, v_stride: 3 };
        let want = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 11, 21, 12, 22, 13, 23];
        assert_eq!(i420.to_nv12("t").unwrap(), want);
        let uv = [10u8, 20, 11, 21, 99, 12, 22, 13, 23];
        let nv12 = YuvPlanes { format: YuvFormat::Nv12, u: &uv, u_stride: 5, v: &[], v_stride: 0, ..i420 };
        assert_eq!(nv12.to_nv12("t").unwrap(), want);
        let empty = YuvPlanes { width: 0, ..i420 };
        assert!(empty.to_nv12("t").unwrap_err().to_string().contains("0x3"));
        let short = YuvPlanes { v: &v[..3], ..i420 };
        assert!(short.to_nv12("t").unwrap_err().to_string().contains("too small"));
    }

    #[test]
    fn rgba8_equals_rgb_per_pixel_rounded() {
        let (w, h) = (7, 5);
        let y: Vec<u8> = (0..w * h).map(|i| (i * 53 % 256) as u8).collect();
        let (cw, ch) = (4, 3);
        let u: Vec<u8> = (0..cw * ch).map(|i| (i * 97 % 256) as u8).collect();
        let v: Vec<u8> = (0..cw * ch).map(|i| (255 - i * 31 % 256) as u8).collect();
        let planes =
            YuvPlanes { format: YuvFormat::I420, width: w, height: h, y: &y, y_stride: w, u: &u, u_stride: cw, v: &v, v_stride: cw };
        for m in [YuvMatrix::bt601(false), YuvMatrix::bt709(true)] {
            let out = planes.to_rgba8(&m, "t").unwrap();
            for py in 0..h {
                for px in 0..w {
                    let k = (py / 2) * cw + px / 2;
                    let want = m.rgb(f64::from(y[py * w + px]), f64::from(u[k]), f64::from(v[k])).map(|c| (c * 255.0 + 0.5).floor() as u8);
                    let o = 4 * (py * w + px);
                    assert_eq!(&out[o..o + 4], &[want[0], want[1], want[2], 255], "pixel ({px}, {py}) {m:?}");
                }
            }
        }
    }
}
