//! `pg.fromPixels` options (the JSON `web/js/image.js` passes) → a
//! [`pixelgrad::image::PixelSpec`], and a [`Geometry`] back to JavaScript (where the
//! content landed, to map boxes and masks back onto the source). The pixels themselves go
//! straight to the device (`wasm/image.rs`); this part is platform-independent and tested
//! natively.

use pixelgrad::image::{Antialias, Fit, Geometry, Layout, PixelSpec};
use pixelgrad::{Device, Error, Result, Tensor};
use serde_json::{json, Value};

const OP: &str = "fromPixels";

fn bad(msg: impl Into<String>) -> Error {
    Error::invalid(OP, msg.into())
}

/// A per-channel option: one number for every channel, or an array of at least `channels`
/// numbers (`mean: [0.485, 0.456, 0.406]`).
fn per_channel(v: &Value, name: &str, channels: usize, default: f32) -> Result<[f32; 4]> {
    let mut out = [default; 4];
    match v {
        Value::Null => {}
        Value::Number(n) => out = [n.as_f64().unwrap_or(f64::NAN) as f32; 4],
        Value::Array(a) => {
            if a.len() < channels {
                return Err(bad(format!("{name} has {} values; give one per channel ({channels}) or a single number", a.len())));
            }
            for (c, x) in a.iter().take(4).enumerate() {
                out[c] = x.as_f64().ok_or_else(|| bad(format!("{name}[{c}] is not a number: {x}")))? as f32;
            }
        }
        other => return Err(bad(format!("{name} must be a number or an array of numbers, got {other}"))),
    }
    Ok(out)
}

fn string<'a>(v: &'a Value, name: &str) -> Result<Option<&'a str>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        other => Err(bad(format!("{name} must be a string, got {other}"))),
    }
}

/// The element type of a `pg.fromPixels` result (its `dtype` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PixelDtype {
    /// f32 values, normalised with `mean` / `std` (the default).
    #[default]
    F32,
    /// The f32 values rounded to half precision (nearest, ties to even), in f16 storage
    /// ([`Tensor::narrow_f16`]), on backends that store f16 results.
    F16,
    /// The resampled 8-bit values `0..=255` (no `mean` / `std`), `floor(clamp(v * 255, 0, 255)
    /// + 0.5)` of the f32 value `v` in `[0, 1]`, in 8-bit storage, on backends that have it.
    U8,
}

impl PixelDtype {
    pub fn name(&self) -> &'static str {
        match self {
            PixelDtype::F32 => "float32",
            PixelDtype::F16 => "float16",
            PixelDtype::U8 => "uint8",
        }
    }
}

/// [`parse_options`] without the dtype (for callers that make float32 only).
pub fn parse_spec(json: &str) -> Result<PixelSpec> {
    parse_options(json).map(|(s, _)| s)
}

/// Parses the options object of `pg.fromPixels` (see `web/js/index.d.ts`): `size: [h, w]`,
/// `fit`, `channels`, `layout`, `mean`, `std`, `pad`, `antialias`, `dtype`. Unknown keys are
/// errors (a typo would otherwise be ignored silently), and so are `mean` / `std` with dtype
/// `'uint8'` (8-bit results are the pixel values themselves).
pub fn parse_options(json: &str) -> Result<(PixelSpec, PixelDtype)> {
    let v: Value = serde_json::from_str(json).map_err(|e| bad(format!("options are not valid JSON: {e}")))?;
    let Value::Object(o) = &v else {
        return Err(bad(format!("options must be an object, got {v}")));
    };
    const KEYS: [&str; 9] = ["size", "fit", "channels", "layout", "mean", "std", "pad", "antialias", "dtype"];
    if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(bad(format!("unknown option '{k}' (known: {})", KEYS.join(", "))));
    }
    let get = |k: &str| o.get(k).unwrap_or(&Value::Null);
    let mut spec = PixelSpec::default();
    match get("size") {
        Value::Null => {}
        Value::Array(a) if a.len() == 2 => {
            let side = |x: &Value| x.as_u64().filter(|&n| n as f64 == x.as_f64().unwrap_or(-1.0));
            match (side(&a[0]), side(&a[1])) {
                (Some(h), Some(w)) => spec.size = Some((h as usize, w as usize)),
                _ => return Err(bad(format!("size must be [height, width] of whole numbers, got {}", get("size")))),
            }
        }
        other => return Err(bad(format!("size must be [height, width], got {other}"))),
    }
    if let Some(f) = string(get("fit"), "fit")? {
        spec.fit = Fit::parse(f)?;
    }
    if let Some(l) = string(get("layout"), "layout")? {
        spec.layout = Layout::parse(l)?;
    }
    match get("channels") {
        Value::Null => {}
        c => {
            spec.channels =
                c.as_u64().filter(|n| matches!(n, 1 | 3 | 4)).ok_or_else(|| bad(format!("channels must be 1, 3 or 4, got {c}")))? as usize
        }
    }
    spec.mean = per_channel(get("mean"), "mean", spec.channels, 0.0)?;
    spec.std = per_channel(get("std"), "std", spec.channels, 1.0)?;
    spec.pad = per_channel(get("pad"), "pad", spec.channels, 0.0)?;
    spec.antialias = match get("antialias") {
        Value::Null => Antialias::Auto,
        Value::Bool(true) => Antialias::Always,
        Value::Bool(false) => Antialias::Never,
        Value::String(s) if s == "auto" => Antialias::Auto,
        Value::String(s) if s == "always" => Antialias::Always,
        Value::String(s) if s == "never" => Antialias::Never,
        other => return Err(bad(format!("antialias must be 'auto', 'always', 'never' or a boolean, got {other}"))),
    };
    let dtype = match string(get("dtype"), "dtype")? {
        None | Some("float32") | Some("f32") => PixelDtype::F32,
        Some("float16") | Some("f16") => PixelDtype::F16,
        Some("uint8") | Some("u8") => PixelDtype::U8,
        Some(d) => return Err(bad(format!("dtype '{d}' is not one of float32, float16, uint8"))),
    };
    if dtype == PixelDtype::U8 {
        if let Some(k) = ["mean", "std"].into_iter().find(|k| !get(k).is_null()) {
            return Err(bad(format!(
                "{k} cannot be given with dtype 'uint8': 8-bit results are the resampled pixel values 0..255 (normalise in the model, or use dtype 'float32')"
            )));
        }
    }
    spec.validate(OP)?;
    Ok((spec, dtype))
}

/// The byte of an f32 pixel value `v` in `[0, 1]` under dtype `'uint8'`:
/// `floor(clamp(v * 255, 0, 255) + 0.5)` in f32 arithmetic (what `narrow8.wgsl` computes for fromPixels).
pub fn pixel_byte(v: f32) -> u8 {
    ((v * 255.0).clamp(0.0, 255.0) + 0.5).floor() as u8
}

/// `t` (a float32 fromPixels result) as `dtype` where that needs no backend-specific kernel:
/// float32 as is; float16 through [`Tensor::narrow_f16`] on backends that store f16 results,
/// an error naming the backend elsewhere. `uint8` is made by the caller (a kernel on WebGPU,
/// the host bytes on the CPU, see [`u8_from_values`]); here it is an error.
pub fn finish_float(t: Tensor, dtype: PixelDtype) -> Result<Tensor> {
    match dtype {
        PixelDtype::F32 => Ok(t),
        PixelDtype::F16 => {
            let b = t.device().backend();
            if !b.caps().narrow_f16 {
                return Err(bad(format!(
                    "dtype 'float16' needs a backend that stores f16 results (caps.narrow_f16); the {} backend does not: use dtype 'float32'",
                    t.device().name()
                )));
            }
            t.narrow_f16()
        }
        PixelDtype::U8 => Err(bad("internal: uint8 results are made per backend")),
    }
}

/// The uint8 result from f32 pixel values in `[0, 1]` on the host (the CPU backend): the bytes
/// of [`pixel_byte`] in 8-bit storage, or an error where the backend has none.
pub fn u8_from_values(dev: &Device, values: &[f32], dims: &[usize]) -> Result<Tensor> {
    if !dev.backend().caps().int8 {
        return Err(bad(format!(
            "dtype 'uint8' needs 8-bit storage (caps.int8); the {} backend has none: use dtype 'float32'",
            dev.name()
        )));
    }
    let bytes: Vec<u8> = values.iter().map(|&v| pixel_byte(v)).collect();
    Tensor::from_u8(dev, &bytes, dims.to_vec())
}

/// What JavaScript gets back besides the tensor: the content box in output pixels
/// (`x, y, width, height`; the rest is letterbox padding under `fit: 'contain'`), and how
/// output coordinates map onto the source (`source = (output - box start) * scale + offset`,
/// per axis, in continuous pixel coordinates; use it to map boxes back onto the frame).
pub fn geometry_json(g: &Geometry, source: (usize, usize)) -> Value {
    json!({
        "x": g.x.start, "y": g.y.start, "width": g.x.len, "height": g.y.len,
        "scaleX": g.x.scale, "scaleY": g.y.scale, "offsetX": g.x.offset, "offsetY": g.y.offset,
        "sourceWidth": source.0, "sourceHeight": source.1,
        "antialiasX": g.x.support > 1.0, "antialiasY": g.y.support > 1.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_with_defaults() {
        let s = parse_spec("{}").unwrap();
        assert_eq!(s, PixelSpec::default());
        let s = parse_spec(
            r#"{"size":[224,160],"fit":"contain","layout":"nhwc","channels":3,"mean":[0.485,0.456,0.406],"std":0.5,"pad":[0,0,0],"antialias":false,"dtype":"float32"}"#,
        )
        .unwrap();
        assert_eq!(s.size, Some((224, 160)));
        assert_eq!((s.fit, s.layout, s.channels, s.antialias), (Fit::Contain, Layout::Nhwc, 3, Antialias::Never));
        assert_eq!(&s.mean[..3], &[0.485, 0.456, 0.406]);
        assert_eq!(s.std, [0.5; 4]);
        let s = parse_spec(r#"{"channels":1,"mean":[0.5],"antialias":"always"}"#).unwrap();
        assert_eq!((s.channels, s.mean[0], s.antialias), (1, 0.5, Antialias::Always));
    }

    #[test]
    fn bad_options_name_the_problem() {
        for (json, want) in [
            (r#"{"size":[0,10]}"#, "zero side"),
            (r#"{"size":[10]}"#, "[height, width]"),
            (r#"{"size":[1.5,10]}"#, "whole numbers"),
            (r#"{"fit":"stretch"}"#, "fit 'stretch'"),
            (r#"{"layout":"chw"}"#, "layout 'chw'"),
            (r#"{"channels":2}"#, "channels must be 1, 3 or 4"),
            (r#"{"mean":[0.5,0.5]}"#, "mean has 2 values"),
            (r#"{"std":[1,0,1]}"#, "std[1]"),
            (r#"{"dtype":"int8"}"#, "dtype 'int8' is not one of"),
            (r#"{"dtype":"uint8","mean":0.5}"#, "mean cannot be given with dtype 'uint8'"),
            (r#"{"dtype":"u8","std":[1,1,1]}"#, "std cannot be given with dtype 'uint8'"),
            (r#"{"sise":[2,2]}"#, "unknown option 'sise'"),
            (r#"[1]"#, "must be an object"),
        ] {
            let e = parse_spec(json).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("fromPixels"), "{json}: {e}");
        }
    }

    #[test]
    fn geometry_reports_the_letterbox() {
        let s = parse_spec(r#"{"size":[50,50],"fit":"contain"}"#).unwrap();
        let g = Geometry::new(200, 100, &s, "t").unwrap();
        let v = geometry_json(&g, (200, 100));
        assert_eq!((v["x"].as_u64(), v["y"].as_u64(), v["width"].as_u64(), v["height"].as_u64()), (Some(0), Some(12), Some(50), Some(25)));
        assert_eq!(v["scaleX"].as_f64(), Some(4.0));
        assert_eq!(v["antialiasX"].as_bool(), Some(true));
    }

    #[test]
    fn dtypes_parse_and_convert_on_the_cpu() {
        for (json, want) in
            [("{}", PixelDtype::F32), (r#"{"dtype":"float16"}"#, PixelDtype::F16), (r#"{"dtype":"uint8","pad":0.5}"#, PixelDtype::U8)]
        {
            assert_eq!(parse_options(json).unwrap().1, want, "{json}");
        }
        assert_eq!([pixel_byte(0.0), pixel_byte(-1.0), pixel_byte(2.0), pixel_byte(100.0 / 255.0)], [0, 0, 255, 100]);
        assert_eq!(pixel_byte(100.5 / 255.0), 101);
        let dev = Device::new(pixelgrad::cpu::CpuBackend::new());
        let v = [0.0f32, 0.1, 1.0 / 3.0, 0.5, 1.0, 70000.0];
        let t = finish_float(Tensor::from_vec(&dev, &v, vec![1, 1, 2, 3]).unwrap(), PixelDtype::F16).unwrap();
        assert_eq!(t.storage_dtype(), pixelgrad::kernel::DType::F16);
        let got = t.to_vec().unwrap();
        for (g, x) in got.iter().zip(v) {
            assert_eq!(*g, pixelgrad::half::f16::from_f32(x).to_f32());
        }
        let t = u8_from_values(&dev, &v[..5], &[1, 5]).unwrap();
        assert_eq!(t.storage_dtype(), pixelgrad::kernel::DType::U8);
        assert_eq!(t.to_vec().unwrap(), vec![0.0, 26.0, 85.0, 128.0, 255.0]);
    }
}
