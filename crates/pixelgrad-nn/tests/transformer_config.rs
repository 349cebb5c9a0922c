//! The transformer layers in the model description: `embedding`, `positionEmbedding`,
//! `layerNormalization`, `rmsNormalization`, `multiHeadAttention`, `transformerBlock`, and a
//! dense layer on a sequence, built from JSON; bad options are typed errors naming the layer.

use pixelgrad_conformance::reference_device;
use pixelgrad_core::Tensor;
use pixelgrad_nn::config::SampleShape;
use pixelgrad_nn::{Mode, ModelConfig, Module};

const DECODER: &str = r#"{"layers": [
  {"type": "embedding", "inputDim": 11, "outputDim": 8, "inputShape": [5]},
  {"type": "positionEmbedding", "sequenceLength": 16},
  {"type": "transformerBlock", "numHeads": 4, "numKeyValueHeads": 2, "intermediateDim": 12,
   "activation": "swiglu", "normalization": "rmsNormalization", "dropout": 0.1, "rotaryMaxWavelength": 10000},
  {"type": "transformerBlock", "numHeads": 2, "intermediateDim": 16},
  {"type": "multiHeadAttention", "numHeads": 2, "keyDim": 3, "useCausalMask": true},
  {"type": "layerNormalization"},
  {"type": "rmsNormalization", "epsilon": 1e-5},
  {"type": "dense", "units": 11}]}"#;

#[test]
fn a_decoder_description_builds_and_runs() {
    let cfg = ModelConfig::from_json(DECODER).unwrap();
    // the description survives a round trip through its JSON
    assert_eq!(ModelConfig::from_json(&cfg.to_json()).unwrap(), cfg);
    let dev = reference_device();
    let built = cfg.build_parts(&dev, 3, None).unwrap();
    assert_eq!(built.input, SampleShape::Flat(5));
    assert_eq!(built.output, SampleShape::Sequence(5, 11));
    let kinds: Vec<&str> = built.layers.iter().map(|l| l.kind).collect();
    let want = [
        "embedding",
        "positionEmbedding",
        "transformerBlock",
        "transformerBlock",
        "multiHeadAttention",
        "layerNormalization",
        "rmsNormalization",
        "dense",
    ];
    assert_eq!(kinds, want);
    // parameter counts: table 11x8; positions 16x8; the SwiGLU block: q 8x8, k and v 8x4 (2 kv
    // heads of 2), o 8x8, all with biases, rms gammas 2x8, gate/up 8x12, down 12x8 (no biases)
    let swiglu = (64 + 8) + 2 * (32 + 4) + (64 + 8) + 16 + 2 * 96 + 96;
    let gelu = 4 * (64 + 8) + 4 * 8 + (8 * 16 + 16) + (16 * 8 + 8);
    // attention with keyDim 3: q, k, v 8x6 (+6), o 6x8 (+8)
    let mha = 3 * (48 + 6) + (48 + 8);
    let params: Vec<usize> = built.layers.iter().map(|l| l.params).collect();
    assert_eq!(params, [88, 128, swiglu, gelu, mha, 16, 8, 8 * 11 + 11]);
    assert_eq!(built.layers[0].weight.as_deref(), Some("0.embeddings"));
    assert_eq!(built.layers[7].weight.as_deref(), Some("7.weight"));
    let ids = Tensor::from_f64(&dev, &[1.0, 2.0, 3.0, 10.0, 0.0, 4.0, 4.0, 4.0, 4.0, 4.0], [2, 5]).unwrap();
    let y = built.seq.forward(&ids, Mode::Train).unwrap();
    assert_eq!(y.dims(), &[2, 5, 11]);
    assert!(y.to_vec_f64().unwrap().iter().all(|v| v.is_finite()));
    // the same seed draws the same weights
    let again = cfg.build(&dev, 3).unwrap();
    let y2 = again.forward(&ids, Mode::Eval).unwrap();
    assert_eq!(built.seq.forward(&ids, Mode::Eval).unwrap().to_vec_f64().unwrap(), y2.to_vec_f64().unwrap());
}

#[test]
fn bad_transformer_descriptions_are_typed_errors() {
    let dev = reference_device();
    let build = |layers: &str| -> String {
        match ModelConfig::from_json(&format!(r#"{{"layers": [{layers}]}}"#)) {
            Err(e) => e.to_string(),
            Ok(cfg) => cfg.build(&dev, 0).err().map(|e| e.to_string()).unwrap_or_else(|| "built".into()),
        }
    };
    let emb = r#"{"type": "embedding", "inputDim": 10, "outputDim": 6, "inputShape": [4]}"#;
    for (layers, part) in [
        (format!(r#"{emb}, {{"type": "multiHeadAttention", "numHeads": 4}}"#), "4 heads do not divide the width 6"),
        (
            format!(r#"{emb}, {{"type": "transformerBlock", "numHeads": 3, "numKeyValueHeads": 2, "intermediateDim": 4}}"#),
            "not a multiple of 2",
        ),
        (format!(r#"{emb}, {{"type": "transformerBlock", "numHeads": 2, "intermediateDim": 0}}"#), "intermediateDim"),
        (
            format!(r#"{emb}, {{"type": "transformerBlock", "numHeads": 2, "intermediateDim": 4, "activation": "relu"}}"#),
            "unknown activation 'relu'",
        ),
        (
            format!(r#"{emb}, {{"type": "transformerBlock", "numHeads": 2, "intermediateDim": 4, "normalization": "batch"}}"#),
            "unknown normalization",
        ),
        (format!(r#"{emb}, {{"type": "transformerBlock", "numHeads": 2, "intermediateDim": 4, "dropout": 1.5}}"#), "dropout 1.5"),
        (format!(r#"{emb}, {{"type": "multiHeadAttention", "numHeads": 2, "rotaryMaxWavelength": 10000}}"#), "even head_dim"),
        (format!(r#"{emb}, {{"type": "multiHeadAttention", "numHeads": 2, "dropout": -0.5}}"#), "dropout -0.5"),
        (format!(r#"{emb}, {{"type": "multiHeadAttention", "numHeads": 3, "rotaryMaxWavelength": 0.5}}"#), "rotaryMaxWavelength 0.5"),
        (format!(r#"{emb}, {{"type": "positionEmbedding", "sequenceLength": 3}}"#), "shorter than the input's 4"),
        (format!(r#"{emb}, {{"type": "layerNormalization", "epsilon": -1}}"#), "epsilon -1"),
        (format!(r#"{emb}, {{"type": "batchNormalization"}}"#), "use layerNormalization"),
        (format!(r#"{emb}, {{"type": "multiHeadAttention", "numHeads": 2, "heads": 3}}"#), "unknown field `heads`"),
        (r#"{"type": "embedding", "inputDim": 0, "outputDim": 6, "inputShape": [4]}"#.to_string(), "inputDim and outputDim"),
        (r#"{"type": "embedding", "inputDim": 5, "outputDim": 6, "inputShape": [2, 4]}"#.to_string(), "expects token ids [seq]"),
        (r#"{"type": "multiHeadAttention", "numHeads": 2, "inputShape": [8]}"#.to_string(), "expects a sequence"),
        (r#"{"type": "embedding", "inputDim": 100000, "outputDim": 100000, "inputShape": [4]}"#.to_string(), "more than"),
    ] {
        let err = build(&layers);
        assert!(err.contains(part), "{layers}: {err}");
        assert!(err.contains("layer") || err.contains("layers[1]"), "the error names the layer: {err}");
    }
    // out-of-range ids at run time
    let cfg = ModelConfig::from_json(&format!(r#"{{"layers": [{emb}]}}"#)).unwrap();
    let model = cfg.build(&dev, 0).unwrap();
    let err = model.forward(&Tensor::from_f64(&dev, &[0.0, 1.0, 2.0, 10.0], [1, 4]).unwrap(), Mode::Eval).unwrap_err().to_string();
    assert!(err.contains("token id 10"), "{err}");
}

/// A sequence output `[N, S, C]` (a decoder's next-token logits) takes class indices at every
/// position `[N, S]`: the loss is the mean over the `N · S` rows, the accuracy counts a sample's
/// share of right positions, and shapes that do not fit are typed errors.
#[test]
fn a_sequence_output_takes_class_indices_at_every_position() {
    use pixelgrad_nn::loss::TargetKind;
    use pixelgrad_nn::Loss;
    let dev = reference_device();
    let logits: Vec<f64> = (0..24).map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0).collect();
    let out = Tensor::from_f64(&dev, &logits, [2, 3, 4]).unwrap();
    let classes = [1.0, 0.0, 3.0, 2.0, 2.0, 0.0];
    let y = Tensor::from_f64(&dev, &classes, [2, 3]).unwrap();
    let ce = Loss::CrossEntropy;
    let got = ce.compute(&out, &y).unwrap().to_vec_f64().unwrap()[0];
    let rows = ce.compute(&out.reshape([6, 4]).unwrap(), &y.reshape([6]).unwrap()).unwrap().to_vec_f64().unwrap()[0];
    assert!((got - rows).abs() < 1e-12, "{got} vs {rows}");
    // the same from the formula: mean over rows of logsumexp - logit[class]
    let want: f64 =
        logits.chunks(4).zip(classes).map(|(r, c)| r.iter().map(|v| v.exp()).sum::<f64>().ln() - r[c as usize]).sum::<f64>() / 6.0;
    // (the reference device computes in f32)
    assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    let right = logits
        .chunks(4)
        .zip(classes)
        .filter(|(r, c)| r.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, _)| i) == Some(*c as usize))
        .count();
    let correct = ce.correct(&out, &y).unwrap().unwrap().to_vec_f64().unwrap()[0];
    assert!((correct - right as f64 / 3.0).abs() < 1e-6, "{correct} vs {right} / 3");
    assert!(ce.check("fit", &[3, 4], TargetKind::Values(&[3])).is_ok());
    assert!(ce.check("fit", &[3, 1], TargetKind::Values(&[3])).is_err());
    assert!(ce.check("fit", &[3, 4], TargetKind::Values(&[2])).is_err());
    let wrong = Tensor::from_f64(&dev, &classes, [3, 2]).unwrap();
    assert!(ce.compute(&out, &wrong).is_err());
}
