//! The npm package's manifest and version stamp. `web/js/package.json` is the checked-in
//! manifest of the published package; its `version` is a placeholder (`0.0.0-source`) that
//! `cargo xtask build-wasm` replaces with the Rust workspace's version, the one source of the
//! version, which it also writes into `version.js` (what `pg.version` exports).

use serde_json::Value;
use std::path::Path;

/// The version the checked-in manifest and `version.js` carry in the source tree.
pub const SOURCE_VERSION: &str = "0.0.0-source";

/// `manifest` (the text of `web/js/package.json`) with its version set to `version`. The text
/// is kept as written but for that one field; it must parse, be named `pixelgrad` and carry
/// the placeholder version exactly once.
pub fn stamp(manifest: &str, version: &str) -> Result<String, String> {
    let parsed: Value = serde_json::from_str(manifest).map_err(|e| format!("web/js/package.json: {e}"))?;
    if parsed.get("name").and_then(Value::as_str) != Some("pixelgrad") {
        return Err("web/js/package.json: \"name\" must be \"pixelgrad\"".into());
    }
    if parsed.get("version").and_then(Value::as_str) != Some(SOURCE_VERSION) {
        return Err(format!(
            "web/js/package.json: \"version\" must be the placeholder \"{SOURCE_VERSION}\" (the workspace version is stamped in)"
        ));
    }
    let field = format!("\"version\": \"{SOURCE_VERSION}\"");
    if manifest.matches(&field).count() != 1 {
        return Err(format!("web/js/package.json: write the version as {field}, once"));
    }
    Ok(manifest.replacen(&field, &format!("\"version\": \"{version}\""), 1))
}

/// `version.js` for the built package.
pub fn version_module(version: &str) -> String {
    format!(
        "// The package version, stamped by `cargo xtask build-wasm` from the Rust workspace \
         (Cargo.toml).\nexport const version = '{version}';\n"
    )
}

/// Every file the manifest points at (`exports` targets, `main`, `types`, `sideEffects`
/// entries) exists in `dir`, so the built package cannot ship a dangling entry.
pub fn check_targets(manifest: &str, dir: &Path) -> Result<(), String> {
    let v: Value = serde_json::from_str(manifest).map_err(|e| format!("package.json: {e}"))?;
    let mut targets = Vec::new();
    fn collect(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Object(m) => m.values().for_each(|x| collect(x, out)),
            Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    let exports = v.get("exports").ok_or("package.json has no \"exports\" map")?;
    let root = exports.get(".").ok_or("package.json: \"exports\" has no \".\" entry")?;
    for cond in ["types", "import"] {
        if root.get(cond).and_then(Value::as_str).is_none() {
            return Err(format!("package.json: exports[\".\"] has no \"{cond}\" condition"));
        }
    }
    collect(exports, &mut targets);
    for key in ["main", "types", "sideEffects"] {
        if let Some(x) = v.get(key) {
            collect(x, &mut targets);
        }
    }
    for t in targets {
        let rel = t.strip_prefix("./").ok_or_else(|| format!("package.json: target '{t}' must start with ./"))?;
        if !dir.join(rel).is_file() {
            return Err(format!("package.json points at '{t}', which the package does not contain"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "{\n  \"name\": \"pixelgrad\",\n  \"version\": \"0.0.0-source\",\n  \"exports\": { \".\": { \"types\": \"./index.d.ts\", \"import\": \"./index.js\" } },\n  \"sideEffects\": [\"./index.js\"]\n}\n";

    #[test]
    fn stamps_only_the_version() {
        let out = stamp(MANIFEST, "1.2.3").unwrap();
        assert_eq!(out, MANIFEST.replace("0.0.0-source", "1.2.3"));
    }

    #[test]
    fn refuses_a_manifest_that_hard_codes_a_version() {
        let e = stamp(&MANIFEST.replace("0.0.0-source", "0.1.0"), "0.1.0").unwrap_err();
        assert!(e.contains("placeholder"), "{e}");
        assert!(stamp("{", "1.0.0").is_err());
        assert!(stamp(&MANIFEST.replace("\"pixelgrad\"", "\"other\""), "1.0.0").is_err());
    }

    #[test]
    fn the_checked_in_manifest_stamps() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../web/js/package.json")).unwrap();
        let out = stamp(&text, env!("CARGO_PKG_VERSION")).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../web/js/version.js")).unwrap();
        assert!(src.contains(&format!("'{SOURCE_VERSION}'")), "web/js/version.js must carry the placeholder");
    }

    #[test]
    fn dangling_targets_are_refused() {
        let dir = std::env::temp_dir().join(format!("pixelgrad-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.js"), "").unwrap();
        let e = check_targets(MANIFEST, &dir).unwrap_err();
        assert!(e.contains("./index.d.ts"), "{e}");
        std::fs::write(dir.join("index.d.ts"), "").unwrap();
        check_targets(MANIFEST, &dir).unwrap();
        let no_types = MANIFEST.replace("\"types\": \"./index.d.ts\", ", "");
        assert!(check_targets(&no_types, &dir).unwrap_err().contains("types"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
