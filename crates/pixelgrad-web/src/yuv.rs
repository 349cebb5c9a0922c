//! `pg.fromYUV`: raw 4:2:0 planes (I420 or NV12, 8-bit, any row strides) → a model input on the
//! device. The planes are uploaded as sample values, converted to RGB by
//! [`pixelgrad_core::composite::yuv_to_rgb`] and preprocessed by
//! [`pixelgrad_core::composite::preprocess`] — tensor ops on the runtime's device (fused on the
//! GPU backends), the same definitions the host reference
//! ([`pixelgrad_core::image::yuv::YuvPlanes::to_rgba8`]) uses, without its rounding to bytes.

use pixelgrad_core::composite::{preprocess, yuv_to_rgb};
use pixelgrad_core::image::yuv::{YuvFormat, YuvMatrix, YuvPlanes};
use pixelgrad_core::image::{Geometry, PixelSpec};
use pixelgrad_core::{Device, Error, Result, Tensor};

const OP: &str = "fromYUV";

/// A format name as JavaScript passes it (`'I420'`, `'NV12'`, any case).
pub fn parse_format(name: &str) -> Result<YuvFormat> {
    match name.to_ascii_uppercase().as_str() {
        "I420" => Ok(YuvFormat::I420),
        "NV12" => Ok(YuvFormat::Nv12),
        other => Err(Error::invalid(OP, format!("format '{other}' is not supported (I420 or NV12)"))),
    }
}

/// `rows` rows of `row` samples, `stride` apart, as one packed plane of f32 sample values;
/// every `step`-th sample from `first` (NV12's interleaved chroma: step 2).
fn plane(data: &[u8], stride: usize, rows: usize, row: usize, first: usize, step: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * row);
    for r in 0..rows {
        let line = &data[r * stride..];
        out.extend((0..row).map(|c| f32::from(line[first + c * step])));
    }
    out
}

/// The model input for `planes` under `spec`, converted with `matrix`: the tensor and its
/// geometry, as `pg.fromPixels` returns them.
pub fn from_yuv(dev: &Device, planes: &YuvPlanes<'_>, matrix: &YuvMatrix, spec: &PixelSpec) -> Result<(Tensor, Geometry)> {
    let (w, h) = (planes.width, planes.height);
    if w == 0 || h == 0 {
        return Err(Error::invalid(OP, format!("the frame is {w}x{h} pixels; it has nothing to convert")));
    }
    planes.check(OP)?;
    spec.validate(OP)?;
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let y = plane(planes.y, planes.y_stride, h, w, 0, 1);
    let (u, v) = match planes.format {
        YuvFormat::I420 => (plane(planes.u, planes.u_stride, ch, cw, 0, 1), plane(planes.v, planes.v_stride, ch, cw, 0, 1)),
        YuvFormat::Nv12 => (plane(planes.u, planes.u_stride, ch, cw, 0, 2), plane(planes.u, planes.u_stride, ch, cw, 1, 2)),
    };
    let y = Tensor::from_vec(dev, &y, [h, w])?;
    let u = Tensor::from_vec(dev, &u, [ch, cw])?;
    let v = Tensor::from_vec(dev, &v, [ch, cw])?;
    let rgb = yuv_to_rgb(&y, &u, &v, matrix)?.unsqueeze(0)?;
    preprocess(&rgb, spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad_core::image::host::{to_tensor_values, Rgba8};
    use pixelgrad_core::image::{Fit, Layout};

    fn frame(w: usize, h: usize, stride: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let y: Vec<u8> = (0..h * stride).map(|i| (16 + (i * 37) % 220) as u8).collect();
        let u: Vec<u8> = (0..ch * cw).map(|i| (40 + (i * 53) % 180) as u8).collect();
        let v: Vec<u8> = (0..ch * cw).map(|i| (30 + (i * 71) % 200) as u8).collect();
        let uv: Vec<u8> = u.iter().zip(&v).flat_map(|(&a, &b)| [a, b]).collect();
        (y, u, v, uv)
    }

    /// Both formats, odd sizes, padded luma rows, every fit and layout, a 2x downscale: equal
    /// to the host reference (bytes rounded, hence within half a step of 1/255).
    #[test]
    fn planes_match_the_host_reference() {
        let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
        let (w, h, stride) = (13, 9, 16);
        let (y, u, v, uv) = frame(w, h, stride);
        let m = YuvMatrix::bt601(false);
        for format in [YuvFormat::I420, YuvFormat::Nv12] {
            let (pu, pv, us, vs) = match format {
                YuvFormat::I420 => (&u[..], &v[..], w.div_ceil(2), w.div_ceil(2)),
                YuvFormat::Nv12 => (&uv[..], &[][..], 2 * w.div_ceil(2), 0),
            };
            let planes = YuvPlanes { format, width: w, height: h, y: &y, y_stride: stride, u: pu, u_stride: us, v: pv, v_stride: vs };
            let rgba = planes.to_rgba8(&m, "test").unwrap();
            for (fit, layout, size) in
                [(Fit::Fill, Layout::Nchw, None), (Fit::Cover, Layout::Nhwc, Some((5, 6))), (Fit::Contain, Layout::Nchw, Some((8, 4)))]
            {
                let spec = PixelSpec { fit, layout, size, ..PixelSpec::default() };
                let (t, g) = from_yuv(&dev, &planes, &m, &spec).unwrap();
                let (want, dims, g2) = to_tensor_values(Rgba8::packed(&rgba, w, h).unwrap(), &spec, "test").unwrap();
                assert_eq!(t.dims(), &dims[..], "{format:?} {fit:?}");
                assert_eq!((g.x.start, g.x.len, g.y.start, g.y.len), (g2.x.start, g2.x.len, g2.y.start, g2.y.len));
                let got = t.to_vec().unwrap();
                let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(worst <= 0.5 / 255.0 + 1e-5, "{format:?} {fit:?} {layout:?}: off by {worst}");
            }
        }
    }

    #[test]
    fn bad_planes_and_formats_are_errors() {
        let dev = Device::new(pixelgrad_cpu::CpuBackend::new());
        let m = YuvMatrix::bt601(false);
        let y = vec![0u8; 16];
        let short = YuvPlanes {
            format: YuvFormat::I420,
            width: 4,
            height: 4,
            y: &y,
            y_stride: 4,
            u: &y[..3],
            u_stride: 2,
            v: &y[..4],
            v_stride: 2,
        };
        let e = from_yuv(&dev, &short, &m, &PixelSpec::default()).unwrap_err().to_string();
        assert!(e.contains("too small"), "{e}");
        let empty = YuvPlanes { width: 0, ..short };
        assert!(from_yuv(&dev, &empty, &m, &PixelSpec::default()).unwrap_err().to_string().contains("0x4"));
        assert!(parse_format("YUY2").unwrap_err().to_string().contains("I420 or NV12"));
        assert_eq!(parse_format("nv12").unwrap(), YuvFormat::Nv12);
    }
}
