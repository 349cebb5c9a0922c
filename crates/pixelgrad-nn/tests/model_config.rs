//! The model description (`ModelConfig`): presets built through it are bit-identical to the
//! networks the hand-written preset code built (digests recorded from that code before the
//! change), and hostile descriptions are typed errors.

use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::config::MAX_LAYERS;
use pixelgrad_nn::presets::{config_from_meta, ModelSpec, Preset};
use pixelgrad_nn::{Loss, Mode, ModelConfig, Module};

fn dev() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

/// FNV-1a over the parameter names, shapes and value bits, then the output bits of one forward
/// pass on a fixed input.
fn digest(m: &dyn Module, dev: &Device, input: [usize; 3]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    };
    m.visit_params(&mut |name, p| {
        let t = p.tensor();
        eat(name.as_bytes());
        for d in t.dims() {
            eat(&(*d as u64).to_le_bytes());
        }
        for v in t.to_vec().unwrap() {
            eat(&v.to_bits().to_le_bytes());
        }
    });
    let n: usize = input.iter().product();
    let x: Vec<f32> = (0..2 * n).map(|i| ((i * 37 % 101) as f32) / 101.0).collect();
    let y = m.forward(&Tensor::from_vec(dev, &x, [2, input[0], input[1], input[2]]).unwrap(), Mode::Eval).unwrap();
    for v in y.to_vec().unwrap() {
        eat(&v.to_bits().to_le_bytes());
    }
    h
}

const CASES: [(Preset, [usize; 3], usize); 4] =
    [(Preset::SeedMlp, [1, 6, 8], 2), (Preset::Mlp, [1, 8, 8], 10), (Preset::Cnn, [1, 8, 8], 10), (Preset::Cnn, [3, 12, 10], 4)];

#[test]
fn presets_build_the_networks_they_always_built() {
    let d = dev();
    let mut got = Vec::new();
    for (preset, input, classes) in CASES {
        for seed in [1u64, 7] {
            let m = ModelSpec { preset, input, classes }.build(&d, seed).unwrap();
            got.push(digest(&m, &d, input));
        }
    }
    assert_eq!(got, DIGESTS);
}

#[test]
fn a_preset_description_survives_json_and_builds_the_same_network() {
    let d = dev();
    for (preset, input, classes) in CASES {
        let cfg = preset.config(input, classes);
        let json = cfg.to_json();
        let back = ModelConfig::from_json(&json).unwrap();
        assert_eq!(back, cfg, "{json}");
        let a = cfg.build(&d, 3).unwrap();
        let b = back.build(&d, 3).unwrap();
        assert_eq!(digest(&a, &d, input), digest(&b, &d, input));
    }
    let cnn = Preset::Cnn.config([1, 8, 8], 10).to_json();
    assert!(cnn.contains(r#""type":"conv2d","filters":16,"kernelSize":3,"padding":"same","activation":"relu""#), "{cnn}");
}

#[test]
fn old_model_file_strings_load_as_the_preset_description() {
    let old = ModelSpec { preset: Preset::SeedMlp, input: [1, 6, 8], classes: 2 };
    let cfg = config_from_meta(&old.to_meta()).unwrap();
    assert_eq!(cfg, old.config());
    assert_eq!(cfg.name.as_deref(), Some("seed-mlp"));
    assert_eq!(cfg.loss().unwrap(), Loss::Mse);
    // and the JSON a new file stores
    assert_eq!(config_from_meta(&cfg.to_json()).unwrap(), cfg);
    for bad in ["mlp;1,8;10", "lstm;1,8,8;10", "mlp;1,8,8;1", "{\"layers\": 3}"] {
        assert!(config_from_meta(bad).is_err(), "{bad}");
    }
}

fn build_err(json: &str) -> String {
    match ModelConfig::from_json(json) {
        Err(e) => e.to_string(),
        Ok(cfg) => cfg.build(&dev(), 0).err().unwrap_or_else(|| panic!("{json} built")).to_string(),
    }
}

#[test]
fn bad_descriptions_are_errors_naming_the_layer_and_option() {
    let cases = [
        (r#"{"layers": [{"type": "dense", "unit": 3, "inputShape": [4]}]}"#, ["layers[0]", "unknown field `unit`", "units"]),
        (r#"{"layers": [{"type": "dense", "units": 3, "inputShape": [4]}, {"type": "lstm"}]}"#, ["layers[1]", "lstm", "dense"]),
        (
            r#"{"layers": [{"type": "conv2d", "filters": 3, "kernelSize": [3, 2], "inputShape": [8, 8, 1]}]}"#,
            ["layers[0]", "square", "conv2d"],
        ),
        (
            r#"{"layers": [{"type": "conv2d", "filters": 3, "kernelSize": 3, "padding": "full", "inputShape": [8, 8, 1]}]}"#,
            ["layers[0]", "full", "same"],
        ),
        (r#"{"layers": [{"type": "dense", "units": 3, "inputShape": [4], "trainable": "no"}]}"#, ["layers[0]", "'trainable'", "\"no\""]),
        (r#"{"layers": [{"type": "dense", "units": -3, "inputShape": [4]}]}"#, ["layers[0]", "-3", "units"]),
        (r#"{"layer": []}"#, ["unknown field `layer`", "layers", "model"]),
        (r#"{"layers": [{"type": "dense", "units": 3}]}"#, ["inputShape", "first layer", "model"]),
        (r#"{"layers": [{"type": "dense", "units": 3, "inputShape": [4, 4, 1]}]}"#, ["layer 0 (dense)", "flatten", "[4, 4, 1]"]),
        (r#"{"layers": [{"type": "dense", "units": 3, "inputShape": [3], "activation": "swish"}]}"#, ["layer 0", "swish", "relu"]),
        (r#"{"layers": [{"type": "onnx", "model": 0, "inputShape": [3]}]}"#, ["layer 0 (onnx)", "browser", "onnx"]),
    ];
    for (json, needles) in cases {
        let e = build_err(json);
        for n in needles {
            assert!(e.contains(n), "{json}: '{e}' lacks '{n}'");
        }
    }
}

/// Hostile sizes (from a model file or a page) are typed errors before anything is allocated.
#[test]
fn sizes_that_overflow_or_exceed_the_limit_are_errors() {
    let max = usize::MAX;
    for json in [
        r#"{"layers": [{"type": "dense", "units": 100000000, "inputShape": [784]}]}"#.to_string(),
        format!(r#"{{"layers": [{{"type": "flatten", "inputShape": [{max}, {max}, 4]}}, {{"type": "dense", "units": 2}}]}}"#),
        format!(r#"{{"layers": [{{"type": "dense", "units": {max}, "inputShape": [2]}}]}}"#),
        r#"{"layers": [{"type": "conv2d", "filters": 64, "kernelSize": 3, "inputShape": [8192, 8192, 1]}]}"#.to_string(),
        // each layer under the limit, together over it
        r#"{"layers": [{"type": "dense", "units": 8192, "inputShape": [8192]}, {"type": "dense", "units": 8192}]}"#.to_string(),
    ] {
        let e = build_err(&json);
        assert!(e.contains("more than") && e.contains("values"), "{json}: {e}");
    }
    let many = format!(r#"{{"layers": [{}]}}"#, vec![r#"{"type": "flatten"}"#; MAX_LAYERS + 1].join(","));
    assert!(build_err(&many).contains(&format!("more than {MAX_LAYERS} layers")));
}

#[test]
fn a_description_builds_keras_style_layers_with_their_shapes() {
    let cfg = ModelConfig::from_json(
        r#"{"layers": [
            {"type": "conv2d", "filters": 4, "kernelSize": [3, 3], "strides": 1, "padding": "same", "activation": "relu", "inputShape": [8, 8, 1]},
            {"type": "maxPooling2d"},
            {"type": "batchNormalization"},
            {"type": "flatten"},
            {"type": "dropout", "rate": 0.25},
            {"type": "dense", "units": 5, "useBias": false, "kernelInitializer": "heUniform", "trainable": false},
            {"type": "activation", "activation": "softmax"}
        ]}"#,
    )
    .unwrap();
    let d = dev();
    let b = cfg.build_parts(&d, 1, None).unwrap();
    let outs: Vec<Vec<usize>> = b.layers.iter().map(|l| l.output.user_dims(cfg.data_format)).collect();
    assert_eq!(outs, [vec![8, 8, 4], vec![4, 4, 4], vec![4, 4, 4], vec![64], vec![64], vec![5], vec![5]]);
    assert_eq!(b.layers[0].params, 4 * 9 + 4);
    assert_eq!(b.layers[5].params, 64 * 5);
    assert_eq!(b.seq.num_trainable(), b.seq.num_params() - 64 * 5);
    let x = Tensor::ones(&d, [2, 8, 8, 1]).unwrap();
    let y = b.seq.forward(&x, Mode::Eval).unwrap().to_vec().unwrap();
    assert_eq!(y.len(), 10);
    assert!((y[..5].iter().sum::<f32>() - 1.0).abs() < 1e-5);
}

/// Recorded from `ModelSpec::build` as it was before presets became `ModelConfig`s.
const DIGESTS: [u64; 8] = [
    9642446811541370117,
    13412288871829133139,
    15130185765653106213,
    8940149890672734681,
    15687278993126311346,
    1175595922758554301,
    861739806822842294,
    14203738551876029655,
];
