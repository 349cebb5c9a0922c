//! Image composites (`pixelgrad_image::{resize, preprocess, yuv_to_rgb}`,
//! `pixelgrad_core::composite::{topk, non_max_suppression}`): resampling by interpolation
//! matrices, the fromPixels pipeline as tensor ops, Y'CbCr conversion, and the post-processing
//! loops of reductions and gathers.

use pixelgrad_core::composite::{non_max_suppression, topk, NmsOptions};
use pixelgrad_core::Device;
use pixelgrad_image::yuv::YuvMatrix;
use pixelgrad_image::{preprocess, resize, yuv_to_rgb};
use pixelgrad_image::{Antialias, Fit, Layout, PixelSpec};

use crate::harness::{check_all_with, Case, Gen, Read};
use crate::tolerance::{accumulate, EXACT};

type Outcome = std::result::Result<(), String>;

fn spec(h: usize, w: usize, fit: Fit, layout: Layout, channels: usize) -> PixelSpec {
    PixelSpec {
        size: Some((h, w)),
        fit,
        layout,
        channels,
        mean: [0.485, 0.456, 0.406, 0.5],
        std: [0.229, 0.224, 0.225, 0.5],
        pad: [0.5, 0.25, 0.0, 1.0],
        ..PixelSpec::default()
    }
}

/// Scores with ties (0.5 three times, 0.9 twice) for top-k and NMS.
fn tied_scores() -> Gen {
    Gen::Values(vec![0.5, 0.9, 0.1, 0.5, 0.9, 0.3, 0.5, 0.2, 0.7, 0.0, 0.6, 0.4])
}

/// 12 boxes: three clusters of overlapping boxes, corners given in both orders.
fn boxes() -> Gen {
    Gen::Values(vec![
        0.0, 0.0, 10.0, 10.0, // 0
        1.0, 1.0, 11.0, 11.0, // 1 overlaps 0 (IoU ~0.68)
        20.0, 20.0, 30.0, 30.0, // 2
        31.0, 31.0, 21.0, 21.0, // 3 overlaps 2, corners swapped
        0.0, 0.0, 10.0, 10.0, // 4 = 0
        50.0, 0.0, 60.0, 5.0, // 5
        52.0, 0.0, 62.0, 5.0, // 6 overlaps 5 (IoU 0.67)
        5.0, 5.0, 5.0, 15.0, // 7 zero area
        40.0, 40.0, 45.0, 45.0, // 8
        0.0, 0.0, 10.0, 10.0, // 9 = 0
        41.0, 41.0, 46.0, 46.0, // 10 overlaps 8 (IoU ~0.47)
        100.0, 100.0, 101.0, 101.0, // 11
    ])
}

pub async fn images(dev: &Device, read: Read) -> Outcome {
    let px = Gen::Uniform(0.0, 1.0);
    let nms = |iou: f32, score: Option<f32>, max: usize| {
        move |_: &Device, x: &[pixelgrad_core::Tensor]| {
            non_max_suppression(&x[0], &x[1], NmsOptions { max_outputs: max, iou_threshold: iou, score_threshold: score })
        }
    };
    let cases = vec![
        Case::new("images", "resize_down_2x", |_, x| resize(&x[0], 5, 6, Antialias::Auto))
            .input([1, 2, 10, 12], px.clone())
            .tol(accumulate(24)),
        Case::new("images", "resize_down_5x_antialiased", |_, x| resize(&x[0], 3, 4, Antialias::Auto))
            .input([2, 1, 15, 20], px.clone())
            .tol(accumulate(40)),
        Case::new("images", "resize_up_heatmap", |_, x| resize(&x[0], 9, 13, Antialias::Never))
            .input([1, 1, 4, 5], Gen::Uniform(-2.0, 2.0))
            .tol(accumulate(10)),
        Case::new("images", "preprocess_fill_nchw", |_, x| Ok(preprocess(&x[0], &spec(6, 5, Fit::Fill, Layout::Nchw, 3))?.0))
            .input([1, 4, 12, 10], px.clone())
            .tol(accumulate(40)),
        Case::new("images", "preprocess_cover_nhwc", |_, x| Ok(preprocess(&x[0], &spec(4, 4, Fit::Cover, Layout::Nhwc, 3))?.0))
            .input([1, 3, 9, 20], px.clone())
            .tol(accumulate(40)),
        Case::new("images", "preprocess_contain_rgba_padded", |_, x| Ok(preprocess(&x[0], &spec(6, 6, Fit::Contain, Layout::Nchw, 4))?.0))
            .input([1, 4, 7, 16], px.clone())
            .tol(accumulate(40)),
        Case::new("images", "preprocess_luma_nhwc", |_, x| Ok(preprocess(&x[0], &spec(3, 7, Fit::Contain, Layout::Nhwc, 1))?.0))
            .input([1, 3, 5, 9], px.clone())
            .tol(accumulate(40)),
        Case::new("images", "yuv_to_rgb", |_, x| yuv_to_rgb(&x[0], &x[1], &x[2], &YuvMatrix::bt601(false)))
            .input([5, 7], Gen::Uniform(16.0, 235.0))
            .input([3, 4], Gen::Uniform(16.0, 240.0))
            .input([3, 4], Gen::Uniform(16.0, 240.0))
            .tol(accumulate(8)),
        Case::new("images", "topk_values", |_, x| Ok(topk(&x[0], 5)?.0)).input([2, 12], Gen::Uniform(-3.0, 3.0)).tol(EXACT),
        Case::new("images", "topk_indices_with_ties", |_, x| Ok(topk(&x[0], 12)?.1))
            .constant([1, 12], tied_scores())
            .tol(EXACT)
            .forward_only(),
        Case::new("images", "nms", nms(0.5, None, 8)).constant([12, 4], boxes()).constant([12], tied_scores()).tol(EXACT).forward_only(),
        Case::new("images", "nms_score_threshold_runs_out", nms(0.3, Some(0.45), 10))
            .constant([12, 4], boxes())
            .constant([12], tied_scores())
            .tol(EXACT)
            .forward_only(),
        Case::new("images", "nms_nothing_above_threshold", nms(0.5, Some(0.95), 3))
            .constant([12, 4], boxes())
            .constant([12], tied_scores())
            .tol(EXACT)
            .forward_only(),
    ];
    check_all_with(dev, &cases, read).await
}
