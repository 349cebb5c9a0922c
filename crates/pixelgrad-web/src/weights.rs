//! A layer's weights as an RGBA image for `model.drawWeights`.
//!
//! Normalisation (divide by max |w|, found by a device reduction) and the diverging colour map
//! (blue < 0 < red, white at 0, as `pixelgrad_webgl`'s heatmap) run as tensor ops on the model's
//! device, so only `3 x weights` bytes-worth of colour values come back; the host then places
//! the tiles on a grid with 1-pixel grey borders and scales it up.

use pixelgrad::nn::Module;
use pixelgrad::{Error, Result, Tensor};

use crate::net::Net;
use crate::spec::WeightView;

/// What to draw: `values` holds `tiles` tiles of `th` x `tw` values, tile-major.
pub struct Plan {
    pub values: Tensor,
    pub tiles: usize,
    pub th: usize,
    pub tw: usize,
    pub cols: usize,
}

/// An 8-bit RGBA image, rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

/// Longest side the drawn image is scaled up towards (integer factors only, so pixels stay sharp).
const TARGET_SIDE: usize = 280;

fn ceil_sqrt(n: usize) -> usize {
    let mut s = (n as f64).sqrt() as usize;
    while s * s < n {
        s += 1;
    }
    s.max(1)
}

/// Chooses the tensor and the tiling for user layer `layer` (as listed in `sequential`).
pub fn plan(net: &Net, layer: usize) -> Result<Plan> {
    let layers = &net.built.layers;
    let with_weights: Vec<String> =
        layers.iter().enumerate().filter(|(_, l)| l.weight.is_some()).map(|(i, l)| format!("{i} ({})", l.kind)).collect();
    let info = layers.get(layer).ok_or_else(|| {
        Error::invalid(
            "drawWeights",
            format!(
                "layer index {layer} is out of range: the model has {} layers (with weights: {})",
                layers.len(),
                with_weights.join(", ")
            ),
        )
    })?;
    let (Some(name), Some(view)) = (&info.weight, &info.view) else {
        return Err(Error::invalid(
            "drawWeights",
            format!("layer {layer} ({}) has no weights; layers with weights: {}", info.kind, with_weights.join(", ")),
        ));
    };
    let mut found = None;
    net.built.seq.visit_params(&mut |n, p| {
        if n == name {
            found = Some(p.tensor());
        }
    });
    let w = found.ok_or_else(|| Error::invalid("drawWeights", format!("parameter {name} not found")))?;
    let d = w.dims().to_vec();
    Ok(match (view, d.as_slice()) {
        (&WeightView::UnitTiles { h, w: iw }, [_, units]) => {
            Plan { values: w.transpose(0, 1)?, tiles: *units, th: h, tw: iw, cols: ceil_sqrt(*units) }
        }
        (WeightView::Heatmap, [i, u]) => Plan { values: w, tiles: 1, th: *i, tw: *u, cols: 1 },
        (WeightView::Filters, [o, i, kh, kw]) => {
            let cols = if *i > 1 { *i } else { ceil_sqrt(*o) };
            Plan { values: w.clone(), tiles: o * i, th: *kh, tw: *kw, cols }
        }
        _ => return Err(Error::invalid("drawWeights", format!("unexpected weight shape {d:?} for layer {layer}"))),
    })
}

/// How sample 0 of a layer's output (`net.activations_internal`) draws: channels of an image
/// as tiles, a flat vector as one near-square tile (padded with zeros, drawn white).
pub fn activation_plan(t: &Tensor) -> Result<Plan> {
    let d = t.dims().to_vec();
    let first = t.slice(0, 0, 1)?;
    Ok(match d.as_slice() {
        [_, c, h, w] => Plan { values: first.reshape([c * h * w])?, tiles: *c, th: *h, tw: *w, cols: ceil_sqrt(*c) },
        [_, f] => {
            let tw = ceil_sqrt(*f);
            let th = f.div_ceil(tw);
            let flat = first.reshape([*f])?;
            let values = if th * tw > *f { Tensor::concat(&[&flat, &Tensor::zeros(t.device(), [th * tw - f])?], 0)? } else { flat };
            Plan { values, tiles: 1, th, tw, cols: 1 }
        }
        _ => return Err(Error::invalid("drawActivations", format!("cannot draw an output of shape {d:?}"))),
    })
}

/// `[3, N]` colour channels in 0..=255 for the values of `t`, computed on `t`'s device.
pub fn colour_map(t: &Tensor) -> Result<Tensor> {
    let n = t.numel();
    let v = t.reshape([1, n])?;
    let scale = v.abs()?.max_axis(1, true)?.max_scalar(1e-12)?;
    let v = v.div(&scale)?;
    // v in [-1, 1]: red = 1 + min(v, 0), green = 1 - |v|, blue = 1 - max(v, 0).
    let r = v.min_scalar(0.0)?.add_scalar(1.0)?;
    let g = v.abs()?.affine(-1.0, 1.0)?;
    let b = v.max_scalar(0.0)?.affine(-1.0, 1.0)?;
    Tensor::concat(&[&r, &g, &b], 0)?.mul_scalar(255.0)
}

/// Places tile-major colour values (`rgb` = the `[3, N]` of [`colour_map`]) on a grid.
pub fn layout(rgb: &[f32], tiles: usize, th: usize, tw: usize, cols: usize) -> Result<Image> {
    let n = tiles * th * tw;
    if rgb.len() != 3 * n || cols == 0 {
        return Err(Error::invalid("drawWeights", format!("{} colour values for {tiles} tiles of {th}x{tw}", rgb.len())));
    }
    let rows = tiles.div_ceil(cols);
    let (w0, h0) = (cols * (tw + 1) + 1, rows * (th + 1) + 1);
    let s = (TARGET_SIDE / w0.max(h0)).clamp(1, 16);
    let (width, height) = (w0 * s, h0 * s);
    let mut pixels = vec![96u8; width * height * 4];
    for px in pixels.chunks_exact_mut(4) {
        px[3] = 255;
    }
    for t in 0..tiles {
        let (ox, oy) = ((t % cols) * (tw + 1) + 1, (t / cols) * (th + 1) + 1);
        for y in 0..th {
            for x in 0..tw {
                let i = (t * th + y) * tw + x;
                let c = [rgb[i], rgb[n + i], rgb[2 * n + i]].map(|v| v.round().clamp(0.0, 255.0) as u8);
                for sy in 0..s {
                    let row = ((oy + y) * s + sy) * width;
                    for sx in 0..s {
                        let o = (row + (ox + x) * s + sx) * 4;
                        pixels[o..o + 3].copy_from_slice(&c);
                    }
                }
            }
        }
    }
    Ok(Image { width, height, pixels })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pixelgrad::cpu::CpuBackend;
    use pixelgrad::Device;

    #[test]
    fn dense_unit_tiles_and_bad_indices() {
        let dev = Device::new(CpuBackend::new());
        let cfg = serde_json::json!({"layers": [
            {"type": "dense", "units": 4, "inputShape": [16]},
            {"type": "dropout", "rate": 0.1},
            {"type": "dense", "units": 2}
        ]});
        let net = Net::new(&dev, cfg).unwrap();
        let p = plan(&net, 0).unwrap();
        assert_eq!((p.tiles, p.th, p.tw, p.cols), (4, 4, 4, 2));
        let rgb = colour_map(&p.values).unwrap().to_vec().unwrap();
        assert_eq!(rgb.len(), 3 * 64);
        assert!(rgb.iter().all(|v| (0.0..=255.0).contains(v)));
        // The largest |w| maps to a saturated colour: one channel pair reaches 0.
        assert!(rgb.iter().any(|v| *v < 1.0));
        let img = layout(&rgb, p.tiles, p.th, p.tw, p.cols).unwrap();
        assert_eq!(img.pixels.len(), img.width * img.height * 4);
        assert_eq!(img.width % 11, 0); // 2 * (4 + 1) + 1 = 11 pixels before scaling
        let e = plan(&net, 1).err().unwrap().to_string();
        assert!(e.contains("no weights") && e.contains("0 (dense)"), "{e}");
        assert!(plan(&net, 7).err().unwrap().to_string().contains("out of range"));
    }
}
