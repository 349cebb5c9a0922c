//! The debugging tools of the JS API, the platform-independent part: `rt.crossCheck(opts)`
//! options → a [`CheckConfig`] (and the test-only fault), and `model.layouts()` rows. The
//! engine is `pixelgrad_nn::crosscheck`, the same one `pixelgrad check` runs.

use pixelgrad::nn::crosscheck::{CheckActivation, CheckConfig, Fault};
use pixelgrad::{Error, Result};
use serde_json::Value;

/// Parses `{ layers, activation, steps, batch, lr, seed, toleranceScale, injectFault }` (every
/// key optional; unknown keys are an error naming them).
pub fn check_options(v: &Value) -> Result<(CheckConfig, Option<Fault>)> {
    let bad = |msg: String| Error::invalid("crossCheck", msg);
    let o = match v {
        Value::Null => return Ok((CheckConfig::default(), None)),
        Value::Object(o) => o,
        _ => return Err(bad("options must be an object, e.g. { layers: [4, 4, 2], steps: 3 }".into())),
    };
    let mut cfg = CheckConfig::default();
    let mut fault = None;
    let int = |k: &str, x: &Value| x.as_u64().map(|n| n as usize).ok_or_else(|| bad(format!("{k} must be a positive integer, got {x}")));
    for (k, x) in o {
        match k.as_str() {
            "layers" => {
                let a = x.as_array().ok_or_else(|| bad(format!("layers must be an array of widths, got {x}")))?;
                cfg.layers = a.iter().map(|w| int("layers[i]", w)).collect::<Result<_>>()?;
            }
            "activation" => {
                cfg.activation = CheckActivation::parse(x.as_str().ok_or_else(|| bad(format!("activation must be a string, got {x}")))?)?
            }
            "steps" => cfg.steps = int(k, x)?,
            "batch" => cfg.batch = int(k, x)?,
            "seed" => cfg.seed = int(k, x)? as u64,
            "lr" => cfg.lr = x.as_f64().ok_or_else(|| bad(format!("lr must be a number, got {x}")))? as f32,
            "toleranceScale" => cfg.tolerance_scale = x.as_f64().ok_or_else(|| bad(format!("toleranceScale must be a number, got {x}")))?,
            "injectFault" => {
                fault =
                    Some(Fault::parse(x.as_str().ok_or_else(|| bad(format!("injectFault must be a string such as 'sigmoid', got {x}")))?)?)
            }
            other => {
                return Err(bad(format!(
                    "unknown option '{other}' (layers, activation, steps, batch, lr, seed, toleranceScale, injectFault)"
                )))
            }
        }
    }
    Ok((cfg, fault))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_options() {
        let (c, f) = check_options(&json!({ "layers": [3, 5, 2], "steps": 2, "activation": "tanh", "injectFault": "matmul@1" })).unwrap();
        assert_eq!((c.layers, c.steps, c.activation), (vec![3, 5, 2], 2, CheckActivation::Tanh));
        assert_eq!(f.unwrap().nth, Some(1));
        assert_eq!(check_options(&Value::Null).unwrap().0, CheckConfig::default());
        for (v, needle) in [(json!({ "layer": [1] }), "unknown option 'layer'"), (json!({ "steps": -1 }), "steps"), (json!([1]), "object")]
        {
            let e = check_options(&v).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }
}
