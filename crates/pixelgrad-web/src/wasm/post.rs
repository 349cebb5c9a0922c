//! Post-processing on the device (`pg.topk`, `pg.softmax`, `pg.nonMaxSuppression`,
//! `pg.resizeBilinear`): the engine's composites (`pixelgrad_core::composite::select` and
//! `::image`), so a model's output is ranked, suppressed or upsampled without a read back;
//! only the small result is read when the caller asks.

use pixelgrad_core::composite::{non_max_suppression, resize, topk, NmsOptions};
use pixelgrad_core::image::Antialias;
use pixelgrad_core::Error;
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
