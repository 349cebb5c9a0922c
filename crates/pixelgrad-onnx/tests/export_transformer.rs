//! Export of the sequence layers: decoders and encoders described as the browser package
//! describes them (`embedding`, `positionEmbedding`, `transformerBlock`, `multiHeadAttention`,
//! `layerNormalization`, `rmsNormalization`, `dense` on a sequence), trained a little, written
//! as ONNX, run by onnxruntime and imported back by pixelgrad: both give pixelgrad's outputs.
//! Layers the export cannot write are typed errors naming the layer.

mod common;

use common::export_round_trip::round_trip;

use pixelgrad_core::{Device, Tensor};
use pixelgrad_nn::layers::{
    Activation, AttentionOptions, Embedding, LearnedPositions, Linear, MultiHeadAttention, Rotary, TimeDistributed,
};
use pixelgrad_nn::optim::Adam;
use pixelgrad_nn::{Init, Loss, Mode, ModelConfig, Module, Optimizer, Sequential};
use pixelgrad_onnx::{export, OnnxError};

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

const DIGITS: usize = 8;
const HALF: usize = 4;
const LEN: usize = 2 * HALF;
const VOCAB: usize = DIGITS + 1;

/// Reverse-task sequences `x₀..x₃ SEP x₃ x₂ x₁` `[n, LEN]` and the next token at every
/// position `[n · LEN]` (the first positions' targets are the digits themselves).
fn reverse_batch(dev: &Device, n: usize, seed: u64) -> (Tensor, Tensor) {
    let mut ids = Vec::with_capacity(n * LEN);
    let mut next = Vec::with_capacity(n * LEN);
    for i in 0..n {
        let d: Vec<f32> = (0..HALF)
            .map(|j| ((pixelgrad_core::rng::uniform(seed, (i * HALF + j) as u64) * DIGITS as f32) as usize % DIGITS) as f32)
            .collect();
        let rev: Vec<f32> = d.iter().rev().copied().collect();
        let seq: Vec<f32> = d.iter().copied().chain([DIGITS as f32]).chain(rev[..HALF - 1].iter().copied()).collect();
        next.extend(seq[1..].iter().copied().chain([rev[HALF - 1]]));
        ids.extend(seq);
    }
    (Tensor::from_vec(dev, &ids, [n, LEN]).unwrap(), Tensor::from_vec(dev, &next, [n * LEN]).unwrap())
}

/// Adam steps of next-token prediction on the reverse task; returns the first and last loss.
fn train(model: &dyn Module, dev: &Device, steps: usize) -> (f64, f64) {
    let mut opt = Adam::new(3e-3);
    let mut losses = Vec::new();
    for step in 0..steps {
        let (ids, next) = reverse_batch(dev, 16, 100 + step as u64);
        let logits = model.forward(&ids, Mode::Train).unwrap().reshape([16 * LEN, VOCAB]).unwrap();
        let loss = Loss::CrossEntropy.compute(&logits, &next).unwrap();
        losses.push(loss.to_vec_f64().unwrap()[0]);
        loss.backward().unwrap();
        opt.step(model).unwrap();
    }
    (losses[0], losses[steps - 1])
}

fn built(json: &str, dev: &Device) -> Sequential {
    ModelConfig::from_json(json).unwrap().build(dev, 5).unwrap()
}

#[test]
fn trained_causal_decoder_round_trips() {
    let dev = cpu();
    let model = built(
        r#"{"layers": [
          {"type": "embedding", "inputDim": 9, "outputDim": 16, "inputShape": [8]},
          {"type": "positionEmbedding", "sequenceLength": 12},
          {"type": "transformerBlock", "numHeads": 4, "intermediateDim": 32, "dropout": 0.1},
          {"type": "layerNormalization", "epsilon": 1e-5},
          {"type": "dense", "units": 9}]}"#,
        &dev,
    );
    let (first, last) = train(&model, &dev, 40);
    println!("decoder loss {first:.3} -> {last:.3}");
    assert!(last < first, "training did not lower the loss ({first} -> {last})");
    let (x, _) = reverse_batch(&dev, 5, 7);
    round_trip("causal-decoder", &model, &x, 1e-4);
}

#[test]
fn grouped_rotary_swiglu_rms_layers_round_trip() {
    let dev = cpu();
    // an encoder (no causal mask) with grouped key/value heads, rotary positions, SwiGLU and
    // RMS norms, then a causal multi-head attention with its own head size and no biases
    let model = built(
        r#"{"layers": [
          {"type": "embedding", "inputDim": 9, "outputDim": 16, "inputShape": [8]},
          {"type": "transformerBlock", "numHeads": 4, "numKeyValueHeads": 2, "intermediateDim": 24,
           "activation": "swiglu", "normalization": "rmsNormalization", "useCausalMask": false,
           "rotaryMaxWavelength": 10000},
          {"type": "multiHeadAttention", "numHeads": 2, "keyDim": 5, "useBias": false, "useCausalMask": true},
          {"type": "multiHeadAttention", "numHeads": 4, "numKeyValueHeads": 1, "rotaryMaxWavelength": 500},
          {"type": "rmsNormalization"},
          {"type": "layerNormalization"},
          {"type": "dense", "units": 9, "activation": "gelu"},
          {"type": "dense", "units": 9, "activation": "softmax"}]}"#,
        &dev,
    );
    // a few steps, so norms' gains, biases and tables are not their initial values
    let (first, last) = train(&model, &dev, 5);
    println!("encoder loss {first:.3} -> {last:.3}");
    let (x, _) = reverse_batch(&dev, 3, 9);
    round_trip("grouped-rotary-swiglu", &model, &x, 1e-4);
}

#[test]
fn hand_built_sequence_layers_round_trip() {
    // the layer types directly (not through a description): a time-distributed dense layer
    // without bias, a gelu block and attention with more heads than the width
    let dev = cpu();
    let mut init = Init::new(3);
    let mut opts = AttentionOptions::new(6, 3);
    opts.head_dim = Some(4);
    opts.causal = true;
    let model = Sequential::new()
        .push(Embedding::new(&dev, 5, 6, &mut init).unwrap())
        .push(LearnedPositions::new(&dev, 4, 6, &mut init).unwrap())
        .push(MultiHeadAttention::new(&dev, opts, &mut init).unwrap())
        .push(TimeDistributed::new(Box::new(
            Linear::with_init(&dev, 6, 7, pixelgrad_nn::init::WeightInit::Glorot, false, &mut init).unwrap(),
        )))
        .push(Activation::Tanh);
    let x = Tensor::from_vec(&dev, &[0.0, 1.0, 4.0, 2.0, 3.0, 3.0, 0.0, 1.0], [2, 4]).unwrap();
    round_trip("hand-built", &model, &x, 1e-4);
}

fn export_error(model: &dyn Module, sample: &[usize]) -> String {
    match export::to_onnx(model, sample) {
        Err(e @ OnnxError::Export(_)) => e.to_string(),
        Err(e) => panic!("not an export error: {e}"),
        Ok(_) => panic!("exported a model it cannot write"),
    }
}

#[test]
fn layers_the_export_cannot_write_are_typed_errors() {
    let dev = cpu();
    let mut init = Init::new(1);
    // a time-distributed layer other than a dense one
    let td = Sequential::new().push(TimeDistributed::new(Box::new(Activation::Relu)));
    let e = export_error(&td, &[4, 6]);
    assert!(e.contains("TimeDistributed"), "{e}");
    // attention where the export does not know the sample is a sequence
    let mha = Sequential::new().push(MultiHeadAttention::new(&dev, AttentionOptions::new(6, 2), &mut init).unwrap());
    let e = export_error(&mha, &[6]);
    assert!(e.contains("MultiHeadAttention") && e.contains("sequence"), "{e}");
    // positions of a sequence longer than their table
    let pos = Sequential::new().push(LearnedPositions::new(&dev, 3, 6, &mut init).unwrap());
    let e = export_error(&pos, &[5, 6]);
    assert!(e.contains("PositionEmbedding"), "{e}");
    // a bare rotary layer (applied inside attention only)
    let rot = Sequential::new().push(Rotary::new(4, 100.0).unwrap());
    let e = export_error(&rot, &[2, 3, 4]);
    assert!(e.contains("Rotary"), "{e}");
}
