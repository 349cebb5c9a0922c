//! `--model FILE.json`: a model description trains like the preset it spells out (the same
//! metrics, row for row), its file evaluates, and bad descriptions are one `error:` line.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pixelgrad"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pixelgrad-model-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `mlp` preset on the 8x8 digits, written out by hand as a user would.
const MLP: &str = r#"{
  "dataFormat": "channelsFirst",
  "layers": [
    {"type": "flatten", "inputShape": [1, 8, 8]},
    {"type": "dense", "units": 256, "activation": "relu", "kernelInitializer": "heUniform"},
    {"type": "dense", "units": 10}
  ]
}"#;

fn train(model: &str, out: &std::path::Path) -> String {
    let o = bin().args(["train", "--backend", "cpu", "--epochs", "1", "--seed", "9", "--model", model, "--out"]).arg(out).output().unwrap();
    assert!(o.status.success(), "{model}: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out.join("metrics.csv")).unwrap()
}

#[test]
fn a_description_file_trains_like_the_preset_it_spells_out() {
    let dir = tmp("same");
    let file = dir.join("mlp.json");
    std::fs::write(&file, MLP).unwrap();
    let preset = train("mlp", &dir.join("preset"));
    let described = train(file.to_str().unwrap(), &dir.join("file"));
    assert!(preset.lines().count() > 5);
    assert_eq!(preset, described);
    // the saved file carries the description and evaluates on its own
    let o = bin()
        .args(["eval", "--backend", "cpu", "--seed", "9", "--json", "--model-file"])
        .arg(dir.join("file/model.safetensors"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(o.stdout.trim_ascii()).unwrap();
    assert!(j["test_accuracy"].as_f64().unwrap() > 0.5, "{j}");
}

#[test]
fn bad_description_files_are_one_error_line() {
    let dir = tmp("bad");
    let cases = [
        ("typo.json", MLP.replace("\"units\": 10", "\"unit\": 10"), "layers[2]: (dense) unknown field `unit`"),
        ("nhwc.json", MLP.replace("\"dataFormat\": \"channelsFirst\",", ""), "channelsFirst"),
        ("classes.json", MLP.replace("\"units\": 10", "\"units\": 3"), "does not fit 10 classes"),
        ("huge.json", MLP.replace("\"units\": 256", "\"units\": 100000000000"), "more than"),
        ("loss.json", MLP.replace("\"layers\"", "\"loss\": \"hinge\", \"layers\""), "hinge"),
    ];
    for (name, text, needle) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let o = bin()
            .args(["train", "--backend", "cpu", "--epochs", "1", "--model"])
            .arg(&file)
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(lines[0].contains(name) && lines[0].contains(needle), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let o = bin().args(["train", "--model", "missing.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.json"));
}

/// The first JSON block of the book's "Model descriptions" page, trained as the page says.
#[test]
fn the_book_example_trains() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf();
    let page = std::fs::read_to_string(root.join("docs/src/guides/models.md")).unwrap();
    let start = page.find("```json\n").expect("a json block") + "```json\n".len();
    let json = &page[start..start + page[start..].find("```").unwrap()];
    let dir = tmp("book");
    let file = dir.join("small-cnn.json");
    std::fs::write(&file, json).unwrap();
    let metrics = train(file.to_str().unwrap(), &dir.join("out"));
    assert!(metrics.lines().count() > 5, "{metrics}");
    let o =
        bin().args(["eval", "--backend", "cpu", "--seed", "9", "--model-file"]).arg(dir.join("out/model.safetensors")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A model file written before descriptions existed (a `preset;c,h,w;classes` string under
/// `pixelgrad.model`) still evaluates, with the same result as the same weights in a new file.
#[test]
fn an_old_format_model_file_still_evaluates() {
    use pixelgrad::nn::presets::{ModelSpec, Preset, SPEC_KEY};
    let dir = tmp("old");
    let dev = pixelgrad::Device::new(pixelgrad::cpu::CpuBackend::new());
    let spec = ModelSpec { preset: Preset::Cnn, input: [1, 8, 8], classes: 10 };
    let m = spec.build(&dev, 4).unwrap();
    let eval = |meta: String, name: &str| {
        let f = dir.join(name);
        pixelgrad::nn::io::save(&m, &f, &std::collections::HashMap::from([(SPEC_KEY.to_string(), meta)])).unwrap();
        let o = bin().args(["eval", "--backend", "cpu", "--json", "--model-file"]).arg(&f).output().unwrap();
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let old = eval(spec.to_meta(), "old.safetensors");
    assert!(old.contains("test_accuracy"), "{old}");
    assert_eq!(old, eval(spec.config().to_json(), "new.safetensors"));
}

/// The Flower node builds its initial parameters from a description file too, and writes the
/// description into them.
#[test]
fn federated_write_init_takes_a_description_file() {
    let dir = tmp("fl");
    let file = dir.join("mlp.json");
    std::fs::write(&file, MLP).unwrap();
    let init = dir.join("init.safetensors");
    let o = bin().args(["federated", "--partition", "0/2", "--model"]).arg(&file).arg("--write-init").arg(&init).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let meta = pixelgrad::nn::io::read_metadata(&std::fs::read(&init).unwrap()).unwrap();
    let cfg = pixelgrad::nn::ModelConfig::from_json(&meta["pixelgrad.model"]).unwrap();
    assert_eq!(cfg, pixelgrad::nn::ModelConfig::from_json(MLP).unwrap());
}
