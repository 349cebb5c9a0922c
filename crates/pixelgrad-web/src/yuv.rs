//! `pg.fromYUV`: raw 4:2:0 planes (I420 or NV12, 8-bit, any row strides) → a model input on the
//! device. Every backend converts the frame to 8-bit RGBA exactly as the host reference
//! [`pixelgrad_image::yuv::YuvPlanes::to_rgba8`] does, then preprocesses it as
//! `fromPixels` does, so `fromYUV` of a frame equals `fromPixels` of its RGBA conversion:
//!
//! - WebGPU and WebGL2 upload the samples (1.5 bytes a pixel) and convert them on the device
//!   (`WgpuBackend::from_yuv`, `WebGlBackend::from_yuv_texture`), one kernel or pass before
//!   the from_pixels one;
//! - the CPU runtime and the WebGL1 mode convert on the host ([`host_rgba`]) and take the
//!   `fromPixelsBytes` path.

use pixelgrad_core::{Error, Result};
use pixelgrad_image::yuv::{YuvFormat, YuvMatrix, YuvPlanes};
use pixelgrad_image::PixelSpec;

pub const OP: &str = "fromYUV";

/// A format name as JavaScript passes it (`'I420'`, `'NV12'`, any case).
pub fn parse_format(name: &str) -> Result<YuvFormat> {
    match name.to_ascii_uppercase().as_str() {
        "I420" => Ok(YuvFormat::I420),
        "NV12" => Ok(YuvFormat::Nv12),
        other => Err(Error::invalid(OP, format!("format '{other}' is not supported (I420 or NV12)"))),
    }
}

/// Checks `planes` and `spec` as every backend's path does: an empty frame, planes too small
/// for their rows, or a bad spec is an error naming `fromYUV`.
pub fn check(planes: &YuvPlanes<'_>, spec: &PixelSpec) -> Result<()> {
    let (w, h) = (planes.width, planes.height);
    if w == 0 || h == 0 {
        return Err(Error::invalid(OP, format!("the frame is {w}x{h} pixels; it has nothing to convert")));
    }
    planes.check(OP)?;
    spec.validate(OP)
}

/// The frame as packed 8-bit RGBA on the host (the CPU runtime's and the WebGL1 mode's path),
/// after [`check`].
pub fn host_rgba(planes: &YuvPlanes<'_>, matrix: &YuvMatrix, spec: &PixelSpec) -> Result<Vec<u8>> {
    check(planes, spec)?;
    planes.to_rgba8(matrix, OP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_planes_specs_and_formats_are_errors() {
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
        let e = host_rgba(&short, &m, &PixelSpec::default()).unwrap_err().to_string();
        assert!(e.contains("too small") && e.contains(OP), "{e}");
        let empty = YuvPlanes { width: 0, ..short };
        assert!(host_rgba(&empty, &m, &PixelSpec::default()).unwrap_err().to_string().contains("0x4"));
        let ok = YuvPlanes { u: &y[..4], ..short };
        assert_eq!(host_rgba(&ok, &m, &PixelSpec::default()).unwrap().len(), 64);
        let zero = PixelSpec { size: Some((0, 8)), ..PixelSpec::default() };
        let e = host_rgba(&ok, &m, &zero).unwrap_err().to_string();
        assert!(e.contains("zero side") && e.contains(OP), "{e}");
        assert!(parse_format("YUY2").unwrap_err().to_string().contains("I420 or NV12"));
        assert_eq!(parse_format("nv12").unwrap(), YuvFormat::Nv12);
    }
}
