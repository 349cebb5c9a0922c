//! Images into model inputs: the one definition of how pixels become a tensor, shared by every
//! path that does it. (Formerly `pixelgrad_core::image` and
//! `pixelgrad_core::composite::{preprocess, resize, yuv_to_rgb}`; the facade keeps both paths as
//! `pixelgrad::image` and `pixelgrad::composite`.)
//!
//! A [`PixelSpec`] says what the model wants (size, fit, channels, layout, normalisation); a
//! [`Geometry`] is what that means for one source size (which part of the source lands where,
//! and the filter of each axis). Four implementations follow the same definition:
//!
//! - [`host::to_tensor_values`]: plain f64 loops over 8-bit RGBA pixels — the reference, and
//!   what the CPU backend runs (`pg.fromPixels` on the CPU, via `getImageData`);
//! - [`preprocess`]: tensor ops (two matmuls with interpolation matrices
//!   built from [`Axis::taps`]), differentiable, on any device (the CLI's `--resize`);
//! - the WebGPU kernel `pixelgrad-wgpu/src/kernels/from_pixels.wgsl` and the WebGL program
//!   `pixelgrad-webgl/src/shaders/from_pixels.glsl`, which compute the taps of [`Axis::taps`]
//!   in the shader from the same per-axis numbers ([`Axis`]'s fields).
//!
//! # Resampling
//!
//! Output pixel `o` of an axis (counted from the start of the content box) samples the source
//! at `c = (o + 0.5) * scale + offset - 0.5` (half-pixel centres, as ONNX `Resize` with
//! `coordinate_transformation_mode = half_pixel`). The filter is a triangle of half-width
//! `s` (the axis' `support`): source pixel `j` gets weight `max(0, 1 - |j - c| / s)`,
//! weights are divided by their sum, and indices outside the source read the edge pixel.
//! With `s = 1` this is bilinear interpolation, exactly ONNX `Resize` `mode = linear`; with
//! `s = scale > 1` it is ONNX's `antialias = 1` (the filter stretched by the shrink factor),
//! so every source pixel contributes when shrinking. [`Antialias::Auto`] (the default)
//! stretches the filter only on axes shrunk by more than 2× (at 2× and below, bilinear
//! already reads every source pixel); [`Antialias::Always`] whenever an axis shrinks, and
//! [`Antialias::Never`] never.
//!
//! # Fit
//!
//! - [`Fit::Fill`]: the whole source onto the whole output (aspect ratio not kept);
//! - [`Fit::Cover`]: the largest centred part of the source with the output's aspect ratio,
//!   scaled onto the whole output (crops two sides);
//! - [`Fit::Contain`]: the whole source, scaled by the same factor on both axes to fit inside
//!   the output, centred; the rest is padding (letterbox). The content box has whole-pixel
//!   sides `round(source / factor)` and starts at `floor((output - content) / 2)`; each axis
//!   then maps the whole source onto its content side exactly.
//!
//! # Values
//!
//! 8-bit channels become `v / 255`, then `(v - mean[c]) / std[c]` per output channel. With
//! `channels: 1` the value is the luma `0.299 R + 0.587 G + 0.114 B` (BT.601), with `3` RGB,
//! with `4` RGBA (alpha not premultiplied). Padding is the pixel value `pad[c]` (in `[0, 1]`),
//! normalised like any pixel.

mod geometry;
pub mod host;
mod tensor;
pub mod yuv;

pub use geometry::{Axis, Geometry};
pub use tensor::{preprocess, resize, yuv_to_rgb};

use pixelgrad_core::{Error, Result};

/// How the source is fitted into the output size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fit {
    /// Stretch the whole source onto the whole output.
    #[default]
    Fill,
    /// Crop the source (centred) to the output's aspect ratio, then scale.
    Cover,
    /// Scale the whole source to fit inside the output, centred, padding the rest.
    Contain,
}

impl Fit {
    pub fn parse(s: &str) -> Result<Fit> {
        match s {
            "fill" => Ok(Fit::Fill),
            "cover" => Ok(Fit::Cover),
            "contain" => Ok(Fit::Contain),
            other => Err(Error::invalid("fromPixels", format!("fit '{other}' is not one of fill, cover, contain"))),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Fit::Fill => "fill",
            Fit::Cover => "cover",
            Fit::Contain => "contain",
        }
    }
}

/// Axis order of the image tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `[1, C, H, W]` (ONNX and PyTorch models).
    #[default]
    Nchw,
    /// `[1, H, W, C]` (TF.js and Keras models, `pg.layers.conv2d`).
    Nhwc,
}

impl Layout {
    pub fn parse(s: &str) -> Result<Layout> {
        match s {
            "nchw" | "NCHW" => Ok(Layout::Nchw),
            "nhwc" | "NHWC" => Ok(Layout::Nhwc),
            other => Err(Error::invalid("fromPixels", format!("layout '{other}' is not nchw or nhwc"))),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Layout::Nchw => "nchw",
            Layout::Nhwc => "nhwc",
        }
    }
}

/// When the resampling filter is stretched to cover every source pixel (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Antialias {
    /// On axes shrunk by more than 2×.
    #[default]
    Auto,
    /// On every axis that shrinks.
    Always,
    /// Never: plain bilinear at any scale.
    Never,
}

/// The shrink factor above which [`Antialias::Auto`] stretches the filter.
pub const AUTO_ANTIALIAS_ABOVE: f64 = 2.0;

/// What a model wants from an image. [`PixelSpec::default`]: the source size, RGB, NCHW,
/// values in `[0, 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PixelSpec {
    /// Output `(height, width)`; `None` keeps the source size.
    pub size: Option<(usize, usize)>,
    pub fit: Fit,
    /// 1 (luma), 3 (RGB) or 4 (RGBA).
    pub channels: usize,
    pub layout: Layout,
    /// Per output channel, in pixel units (`[0, 1]`).
    pub mean: [f32; 4],
    pub std: [f32; 4],
    /// Padding of [`Fit::Contain`], per channel, in pixel units (before normalisation).
    pub pad: [f32; 4],
    pub antialias: Antialias,
}

impl Default for PixelSpec {
    fn default() -> Self {
        PixelSpec {
            size: None,
            fit: Fit::Fill,
            channels: 3,
            layout: Layout::Nchw,
            mean: [0.0; 4],
            std: [1.0; 4],
            pad: [0.0; 4],
            antialias: Antialias::Auto,
        }
    }
}

/// Largest output side accepted (a typo such as `size: [224, 2240000]` is an error, not an
/// allocation that fails on the device).
pub const MAX_SIDE: usize = 1 << 14;

impl PixelSpec {
    /// Checks the fields that do not depend on the source (`what` names the caller in errors).
    pub fn validate(&self, what: &str) -> Result<()> {
        let bad = |msg: String| Err(Error::invalid(what, msg));
        if !matches!(self.channels, 1 | 3 | 4) {
            return bad(format!("channels must be 1, 3 or 4, got {}", self.channels));
        }
        if let Some((h, w)) = self.size {
            if h == 0 || w == 0 {
                return bad(format!("size [{h}, {w}] has a zero side; give [height, width] of at least 1"));
            }
            if h > MAX_SIDE || w > MAX_SIDE {
                return bad(format!("size [{h}, {w}] exceeds the largest side {MAX_SIDE}"));
            }
        }
        for c in 0..self.channels {
            if !self.mean[c].is_finite() {
                return bad(format!("mean[{c}] = {} is not a finite number", self.mean[c]));
            }
            if !(self.std[c].is_finite() && self.std[c] != 0.0) {
                return bad(format!("std[{c}] = {} must be a finite non-zero number", self.std[c]));
            }
            if !self.pad[c].is_finite() {
                return bad(format!("pad[{c}] = {} is not a finite number", self.pad[c]));
            }
        }
        Ok(())
    }

    /// `(mul, add)` per output channel: a pixel value `v` in `[0, 1]` becomes `v * mul + add`.
    pub fn affine(&self) -> [(f32, f32); 4] {
        let mut out = [(1.0, 0.0); 4];
        for (c, o) in out.iter_mut().enumerate() {
            let inv = 1.0 / self.std[c] as f64;
            *o = (inv as f32, (-(self.mean[c] as f64) * inv) as f32);
        }
        out
    }

    /// The output shape for a geometry: `[1, C, H, W]` or `[1, H, W, C]`.
    pub fn out_dims(&self, g: &Geometry) -> [usize; 4] {
        match self.layout {
            Layout::Nchw => [1, self.channels, g.y.out, g.x.out],
            Layout::Nhwc => [1, g.y.out, g.x.out, self.channels],
        }
    }
}

/// Luma weights of `channels: 1` (BT.601).
pub const LUMA: [f32; 3] = [0.299, 0.587, 0.114];
