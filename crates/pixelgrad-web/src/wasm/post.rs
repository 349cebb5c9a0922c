//! Post-processing on the device (`pg.topk`, `pg.softmax`, `pg.nonMaxSuppression`,
//! `pg.resizeBilinear`): the engine's composites (`pixelgrad_core::composite::select` and
//! `::image`), so a model's output is ranked, suppressed or upsampled without a read back;
//! only the small result is read when the caller asks.

use pixelgrad::composite::{non_max_suppression, resize, topk, NmsOptions};
use pixelgrad::image::Antialias;
use pixelgrad::{Error, Tensor};
use wasm_bindgen::prelude::*;

use super::runtime::Runtime;
use super::{js_err, DeviceTensor};

#[wasm_bindgen]
impl Runtime {
    /// The `k` largest values along the last axis and their indices (f32), largest first;
    /// ties in index order, NaN last: `[values, indices]`.
    pub fn topk(&self, x: &DeviceTensor, k: u32) -> Result<js_sys::Array, JsValue> {
        let (v, i) = topk(x.tensor(), k as usize).map_err(js_err)?;
        Ok(js_sys::Array::of2(&DeviceTensor::new(v).into(), &DeviceTensor::new(i).into()))
    }

    /// `a` and `b` joined along `axis` (a new tensor on the device).
    pub fn concat2(&self, a: &DeviceTensor, b: &DeviceTensor, axis: u32) -> Result<DeviceTensor, JsValue> {
        Tensor::concat(&[a.tensor(), b.tensor()], axis as usize).map(DeviceTensor::new).map_err(js_err)
    }

    /// A copy of `a` (a concat of one tensor).
    pub fn concat1(&self, a: &DeviceTensor, axis: u32) -> Result<DeviceTensor, JsValue> {
        Tensor::concat(&[a.tensor()], axis as usize).map(DeviceTensor::new).map_err(js_err)
    }

    /// Softmax along `axis` (negative counts from the end).
    pub fn softmax(&self, x: &DeviceTensor, axis: i32) -> Result<DeviceTensor, JsValue> {
        x.tensor().softmax(axis as isize).map(DeviceTensor::new).map_err(js_err)
    }

    /// Greedy non-maximum suppression of `boxes [N, 4]` (corners) by `scores [N]`:
    /// `[maxOutputs]` indices (f32) in selection order, -1 after the last.
    #[wasm_bindgen(js_name = nonMaxSuppression)]
    pub fn non_max_suppression(
        &self,
        boxes: &DeviceTensor,
        scores: &DeviceTensor,
        max_outputs: u32,
        iou_threshold: f32,
        score_threshold: Option<f32>,
    ) -> Result<DeviceTensor, JsValue> {
        let opts = NmsOptions { max_outputs: max_outputs as usize, iou_threshold, score_threshold };
        non_max_suppression(boxes.tensor(), scores.tensor(), opts).map(DeviceTensor::new).map_err(js_err)
    }

    /// `x [N, C, H, W]` resampled to `[N, C, h, w]` (half-pixel bilinear; `antialias`
    /// 'auto' | 'always' | 'never', 'never' for upsampling heatmaps and masks).
    #[wasm_bindgen(js_name = resizeBilinear)]
    pub fn resize_bilinear(&self, x: &DeviceTensor, h: u32, w: u32, antialias: &str) -> Result<DeviceTensor, JsValue> {
        let aa = match antialias {
            "auto" => Antialias::Auto,
            "always" => Antialias::Always,
            "never" => Antialias::Never,
            other => return Err(js_err(Error::invalid("resizeBilinear", format!("antialias '{other}' is not auto, always or never")))),
        };
        resize(x.tensor(), h as usize, w as usize, aa).map(DeviceTensor::new).map_err(js_err)
    }
}

/// RGBA values `[4, N]` in 0..=255 of `t`'s values under `colormap`, on the device.
/// `diverging`: blue < 0 < red, white at 0, scaled by max |v| (the weight images' map);
/// `heat`: black, red, yellow, white over `[lo, hi]`; `mask`: red with alpha = the value over
/// `[lo, hi]` (to lay over the frame it came from).
fn colour(t: &Tensor, colormap: &str, lo: f32, hi: f32) -> pixelgrad::Result<Tensor> {
    let n = t.numel();
    let dev = t.device();
    let opaque = Tensor::full(dev, [1, n], 255.0)?;
    if colormap == "diverging" {
        return Tensor::concat(&[&crate::weights::colour_map(t)?, &opaque], 0);
    }
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return Err(Error::invalid("drawHeatmap", format!("range [{lo}, {hi}] must be finite with lo < hi")));
    }
    let v = t.reshape([1, n])?.affine(1.0 / (hi - lo), -lo / (hi - lo))?.max_scalar(0.0)?.min_scalar(1.0)?;
    let band = |k: f32| -> pixelgrad::Result<Tensor> { v.affine(3.0, -k)?.max_scalar(0.0)?.min_scalar(1.0)?.mul_scalar(255.0) };
    match colormap {
        "heat" => Tensor::concat(&[&band(0.0)?, &band(1.0)?, &band(2.0)?, &opaque], 0),
        "mask" => {
            let zero = Tensor::zeros(dev, [1, n])?;
            Tensor::concat(&[&opaque, &zero, &zero, &v.mul_scalar(255.0)?], 0)
        }
        other => Err(Error::invalid("drawHeatmap", format!("colormap '{other}' is not diverging, heat or mask"))),
    }
}

/// The height and width of a map `[h, w]` (also `[1, h, w]`, `[1, 1, h, w]`), or an error.
fn map_size(t: &Tensor) -> Result<(usize, usize), JsValue> {
    let d = t.dims().to_vec();
    let (h, w) = match d.as_slice() {
        [h, w] | [1, h, w] | [1, 1, h, w] => (*h, *w),
        _ => return Err(js_err(Error::invalid("drawHeatmap", format!("expects a map [h, w] (or [1, h, w], [1, 1, h, w]), got {d:?}")))),
    };
    if h == 0 || w == 0 {
        return Err(js_err(Error::invalid("drawHeatmap", "the map is empty")));
    }
    Ok((h, w))
}

#[wasm_bindgen]
impl Runtime {
    /// A `[h, w]` map (also `[1, h, w]`, `[1, 1, h, w]`) as `{ width, height, pixels }` RGBA,
    /// colour-mapped on the device (see [`colour`]); only the 8-bit image is read back.
    #[wasm_bindgen(js_name = heatmapImage)]
    pub fn heatmap_image(&self, x: &DeviceTensor, colormap: &str, lo: f32, hi: f32) -> Result<js_sys::Promise, JsValue> {
        let t = x.tensor();
        let (h, w) = map_size(t)?;
        // [4, N] -> [N, 4]: RGBA pixels in row order.
        let rgba = colour(t, colormap, lo, hi).and_then(|c| c.transpose(0, 1)).map_err(js_err)?;
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let v = rgba.to_vec_async().await.map_err(js_err)?;
            let px: Vec<u8> = v.iter().map(|x| x.round().clamp(0.0, 255.0) as u8).collect();
            let o = js_sys::Object::new();
            js_sys::Reflect::set(&o, &"width".into(), &(w as u32).into())?;
            js_sys::Reflect::set(&o, &"height".into(), &(h as u32).into())?;
            js_sys::Reflect::set(&o, &"pixels".into(), &js_sys::Uint8ClampedArray::from(&px[..]).into())?;
            Ok(o.into())
        }))
    }

    /// The colour-mapped map as a device tensor `[h * w, 4]` of RGBA values 0..255 (rows in
    /// order), for drawing on the GPU without a readback (`web/js/overlay.js`).
    #[wasm_bindgen(js_name = heatmapRgba)]
    pub fn heatmap_rgba(&self, x: &DeviceTensor, colormap: &str, lo: f32, hi: f32) -> Result<DeviceTensor, JsValue> {
        let t = x.tensor();
        map_size(t)?;
        colour(t, colormap, lo, hi).and_then(|c| c.transpose(0, 1)).map(DeviceTensor::new).map_err(js_err)
    }
}
