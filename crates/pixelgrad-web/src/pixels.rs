//! `pg.fromPixels` options (the JSON `web/js/image.js` passes) → a
//! [`pixelgrad_core::image::PixelSpec`], and a [`Geometry`] back to JavaScript (where the
//! content landed, to map boxes and masks back onto the source). The pixels themselves go
//! straight to the device (`wasm/image.rs`); this part is platform-independent and tested
//! natively.

use pixelgrad_core::image::{Antialias, Fit, Geometry, Layout, PixelSpec};
use pixelgrad_core::{Error, Result};
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

/// Parses the options object of `pg.fromPixels` (see `web/js/index.d.ts`): `size: [h, w]`,
/// `fit`, `channels`, `layout`, `mean`, `std`, `pad`, `antialias`, `dtype`. Unknown keys are
/// errors (a typo would otherwise be ignored silently).
pub fn parse_spec(json: &str) -> Result<PixelSpec> {
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
    match string(get("dtype"), "dtype")? {
        None | Some("float32") | Some("f32") => {}
        Some(d @ ("float16" | "f16" | "uint8" | "u8")) => {
            return Err(bad(format!("dtype '{d}' is not supported: device tensors are float32 (use dtype 'float32')")))
        }
        Some(d) => return Err(bad(format!("dtype '{d}' is not one of float32"))),
    }
    spec.validate(OP)?;
    Ok(spec)
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
            (r#"{"dtype":"f16"}"#, "dtype 'f16' is not supported"),
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
}
