//! The registry's default-domain rows are the ONNX operator schemas: for every operator and
//! every opset the importer accepts (7 to 23), the schema in force in the pinned `onnx` package
//! (`scripts/onnx-fixtures.sh` installs it in `target/onnx-venv`; opset 23, which it does not
//! know, from the newer `onnx` of `target/onnx23-venv`) has the row's input and output counts,
//! optional inputs and required attributes; the one default-domain row `onnx` has no schema
//! for is onnxruntime's `SimplifiedLayerNormalization`.

mod common;

use std::process::Command;

use pixelgrad_onnx::model::{MAX_OPSET, MIN_OPSET};
use pixelgrad_onnx::registry::{Domain, OPS, VARIADIC};

const DUMP: &str = r#"
import json, sys
import onnx.defs as d
from onnx.defs import OpSchema
out = {}
lo, hi = int(sys.argv[1]), int(sys.argv[2])
for op in sys.argv[3:]:
    rows = []
    for v in range(lo, hi + 1):
        try:
            s = d.get_schema(op, v, "")
        except Exception:
            rows.append(None)
            continue
        big = 2**31 - 1
        rows.append({
            "since": s.since_version,
            "inputs": [s.min_input, -1 if s.max_input == big else s.max_input],
            "outputs": [s.min_output, -1 if s.max_output == big else s.max_output],
            "optional": [i for i, f in enumerate(s.inputs) if f.option == OpSchema.FormalParameterOption.Optional],
            "required": sorted(a for a, at in s.attributes.items() if at.required),
        })
    out[op] = rows
print(json.dumps(out))
"#;

#[test]
fn default_domain_rows_are_the_onnx_schemas() {
    let _ = common::fixtures(); // makes the venvs
    let names: Vec<&str> = OPS.iter().filter(|r| r.domain == Domain::Onnx).map(|r| r.name).collect();
    // opsets up to 22 from the pinned onnx 1.17, opset 23 from onnx23-venv's newer onnx
    const PINNED_MAX: i64 = 22;
    let schemas = |venv: &str, lo: i64, hi: i64| -> serde_json::Value {
        let python = common::repo_root().join(venv).join("bin/python");
        let out = Command::new(python).args(["-c", DUMP, &lo.to_string(), &hi.to_string()]).args(&names).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut dump = schemas("target/onnx-venv", MIN_OPSET, PINNED_MAX);
    let newer = schemas("target/onnx23-venv", PINNED_MAX + 1, MAX_OPSET);
    for n in &names {
        let rows = dump[n].as_array_mut().unwrap();
        rows.extend(newer[n].as_array().unwrap().iter().cloned());
    }
    assert_eq!(MAX_OPSET, 23, "a newer opset needs its onnx package here");
    let mut checked = 0;
    // onnxruntime registers one contrib operator in the default domain; every other row is an
    // onnx operator
    let unknown: Vec<&str> = names.iter().copied().filter(|n| dump[n].as_array().unwrap().iter().all(|v| v.is_null())).collect();
    // (opset 23's operators, which the pinned onnx 1.17 does not know, come from onnx 1.19's
    // schemas above)
    assert_eq!(unknown, ["SimplifiedLayerNormalization"]);
    for row in OPS.iter().filter(|r| r.domain == Domain::Onnx) {
        for (k, opset) in (MIN_OPSET..=MAX_OPSET).enumerate() {
            let want = &dump[row.name][k];
            if want.is_null() {
                continue; // not yet defined at this opset: the registry reads it with its first schema
            }
            let s = row.schema(opset);
            let bound = |v: usize| if v == VARIADIC { -1 } else { v as i64 };
            let got = serde_json::json!({
                "since": s.since,
                "inputs": [s.inputs.0, bound(s.inputs.1)],
                "outputs": [s.outputs.0, bound(s.outputs.1)],
                "optional": s.optional_inputs,
                "required": s.required_attrs,
            });
            // `since` may be older in the registry where a schema changed nothing it records
            let same = ["inputs", "outputs", "optional", "required"].iter().all(|f| got[f] == want[f]);
            assert!(same && s.since <= opset, "{} at opset {opset}: registry {got}, onnx {want}", row.name);
            checked += 1;
        }
    }
    assert!(checked > 1500, "{checked} (operator, opset) pairs checked");
}
