//! The `fromYUV` check shared by the backends' tests: 4:2:0 frames (I420 and NV12, odd sizes,
//! padded rows, BT.601 limited range and BT.709 full range) converted and preprocessed by the
//! backend under test, against the host reference: `YuvPlanes::to_rgba8`, then
//! `image::host::to_tensor_values`.

use pixelgrad_core::Result;
use pixelgrad_image::host::{to_tensor_values, Rgba8};
use pixelgrad_image::yuv::{YuvFormat, YuvMatrix, YuvPlanes};
use pixelgrad_image::{Fit, Layout, PixelSpec};

/// A frame's planes: luma with rows `stride` apart (padding bytes 7), I420 chroma planes and
/// the same chroma interleaved for NV12. Sample values jump around, so a misplaced sample shows.
pub fn yuv_frame(w: usize, h: usize, stride: usize, seed: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>) {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let y: Vec<u8> = (0..h * stride).map(|i| if i % stride < w { (16 + (i * 37 + seed) % 220) as u8 } else { 7 }).collect();
    let u: Vec<u8> = (0..ch * cw).map(|i| (40 + (i * 53 + seed) % 180) as u8).collect();
    let v: Vec<u8> = (0..ch * cw).map(|i| (30 + (i * 71 + seed) % 200) as u8).collect();
    let uv: Vec<u8> = u.iter().zip(&v).flat_map(|(&a, &b)| [a, b]).collect();
    (y, u, v, uv)
}

/// The specs checked: the frame as it is (NHWC, 4 channels, values `byte / 255`), a 2x shrink
/// to NCHW with ImageNet mean/std, and a letterboxed 5x shrink (antialiased) to one channel.
fn specs(w: usize, h: usize) -> Vec<PixelSpec> {
    let imagenet = PixelSpec { mean: [0.485, 0.456, 0.406, 0.5], std: [0.229, 0.224, 0.225, 0.5], ..PixelSpec::default() };
    vec![
        PixelSpec { layout: Layout::Nhwc, channels: 4, ..PixelSpec::default() },
        PixelSpec { size: Some((h.div_ceil(2), w.div_ceil(2))), channels: 3, ..imagenet },
        PixelSpec { size: Some((h.div_ceil(5), w.div_ceil(3))), fit: Fit::Contain, channels: 1, ..imagenet },
    ]
}

/// Runs `convert` (the backend's fromYUV, returning the tensor's values) on every case and
/// checks it against the host reference: every element within one byte step (1/255 over the
/// channel's std), and at most 1 % of the elements off by more than f32 rounding (a byte can
/// differ only where f32 and the host's f64 round a half step differently). Returns the number
/// of cases run.
pub fn check_from_yuv(mut convert: impl FnMut(&YuvPlanes<'_>, &YuvMatrix, &PixelSpec) -> Result<Vec<f32>>) -> usize {
    let mut cases = 0;
    for (w, h, stride) in [(13, 9, 16), (40, 30, 40)] {
        let (y, u, v, uv) = yuv_frame(w, h, stride, cases);
        let i420 = YuvPlanes {
            format: YuvFormat::I420,
            width: w,
            height: h,
            y: &y,
            y_stride: stride,
            u: &u,
            u_stride: w.div_ceil(2),
            v: &v,
            v_stride: w.div_ceil(2),
        };
        let nv12 = YuvPlanes { format: YuvFormat::Nv12, u: &uv, u_stride: 2 * w.div_ceil(2), v: &[], v_stride: 0, ..i420 };
        for planes in [i420, nv12] {
            for m in [YuvMatrix::bt601(false), YuvMatrix::bt709(true)] {
                let rgba = planes.to_rgba8(&m, "reference").expect("reference conversion");
                let img = Rgba8::packed(&rgba, w, h).expect("reference pixels");
                for spec in specs(w, h) {
                    let what = format!("{} {w}x{h} {m:?} {spec:?}", planes.format.name());
                    let (want, _, _) = to_tensor_values(img, &spec, "reference").expect("reference preprocessing");
                    let got = convert(&planes, &m, &spec).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(got.len(), want.len(), "{what}: length");
                    let step = 1.0 / 255.0 / spec.std.iter().take(spec.channels).fold(f32::MAX, |a, &b| a.min(b));
                    let mut off = 0;
                    for (i, (&g, &r)) in got.iter().zip(&want).enumerate() {
                        let d = (g - r).abs();
                        assert!(d <= step * 1.001 + 1e-5, "{what}: element {i}: got {g}, want {r}");
                        off += usize::from(d > 1e-4 + 1e-5 * r.abs());
                    }
                    assert!(off * 100 <= want.len(), "{what}: {off} of {} elements differ from the reference", want.len());
                    cases += 1;
                }
            }
        }
    }
    cases
}
