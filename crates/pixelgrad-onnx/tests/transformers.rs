//! Small transformer exports against onnxruntime (issue 42): the BERT-like encoder, the GPT-like
//! decoder without and with a past key/value cache (Hugging Face's layout), the merged decoder
//! with `If` (fed with and without the cache), the ViT-like image encoder and the Whisper-like
//! audio encoder that `scripts/onnx_transformer_fixtures.py` builds, each in the variants real
//! tools make of it: the export (`fp32`), onnxruntime's transformer optimiser (`ortopt`, fused
//! com.microsoft operators), its 4-bit weight quantiser (`nbits4`, `MatMulNBits`), dynamic int8
//! quantisation (`dynint8`), external-data saving (`external`), and a Llama-like rewrite on opset
//! 23 `Attention`/`RMSNormalization`/`RotaryEmbedding` (`opset23`, the onnx reference evaluator
//! as the oracle). Every case runs twice on one session on the CPU (the second run replays the first),
//! once on WebGPU and WebGL.

mod common;

use std::sync::{Mutex, MutexGuard};

use common::Case;
use pixelgrad_core::Device;

fn cpu() -> Device {
    Device::new(pixelgrad_cpu::CpuBackend::new())
}

fn wgpu() -> Device {
    use pixelgrad_wgpu::{WgpuBackend, WgpuOptions};
    Device::new(WgpuBackend::new(WgpuOptions::default()).expect("a WebGPU adapter (Debian: mesa-vulkan-drivers gives lavapipe)"))
}

fn webgl() -> Device {
    use pixelgrad_webgl::{WebGlBackend, WebGlOptions};
    let opts = WebGlOptions { self_test: false, ..WebGlOptions::default() };
    Device::new(WebGlBackend::new_headless(opts).expect("a headless WebGL (EGL) context (Debian: libegl-mesa0 libgles2)"))
}

/// One GL context at a time in this binary (as in ops_webgl.rs: parallel llvmpipe contexts
/// once crashed the driver).
static ONE_CONTEXT: Mutex<()> = Mutex::new(());

fn one_context() -> MutexGuard<'static, ()> {
    ONE_CONTEXT.lock().unwrap_or_else(|e| e.into_inner())
}

const ARCHS: [&str; 7] = ["bert", "gpt", "gpt_past", "gpt_merged_cache", "gpt_merged_no_cache", "vit", "whisper"];

/// Cases the fixture set holds that pixelgrad refuses, left out of every test here (none now:
/// the merged decoder quantised to 4 bits, whose `MatMulNBits` scales are outer initializers
/// of the `If` branches, runs since the session keeps outer weights that a branch reads as host
/// arguments on the host).
const REFUSED: [&str; 0] = [];

/// The transformer cases of `variant` (every one when `None`), less [`REFUSED`].
fn transformer_cases(variant: Option<&str>) -> Vec<Case> {
    common::cases("models")
        .into_iter()
        .filter(|c| c.tags.iter().any(|t| t == "transformer") && variant.is_none_or(|v| c.tags.iter().any(|t| t == v)))
        .filter(|c| !REFUSED.contains(&c.name.as_str()))
        .collect()
}

/// The cases of `variant`, checked to be one per architecture in `archs` less [`REFUSED`] (so a
/// generator that stopped writing one fails here rather than shrinking the test).
fn variant(variant: &str, archs: &[&str]) -> Vec<Case> {
    let list = transformer_cases(Some(variant));
    let mut names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    let mut want: Vec<String> = archs.iter().map(|a| format!("{a}_{variant}")).filter(|n| !REFUSED.contains(&n.as_str())).collect();
    want.sort();
    assert_eq!(names, want, "the {variant} cases");
    list
}

/// The exports themselves: relative error within 1e-4 of onnxruntime's.
#[test]
fn exports_match_onnxruntime() {
    common::check_cases(&cpu(), "models", &variant("fp32", &ARCHS), 2);
}

/// onnxruntime's transformer optimiser (`optimize_model`, opt_level 0) fused the exports into
/// com.microsoft `Attention`, `EmbedLayerNormalization`, `SkipLayerNormalization`, `BiasGelu`,
/// `FastGelu` and `Gelu` (the fixture lists which per model, and the models do hold them); the
/// optimiser stops on the merged decoder (its shape helper cannot see into `If` branches), so
/// that one has no optimised form.
#[test]
fn optimised_exports_with_fused_operators_match_onnxruntime() {
    let list = variant("ortopt", &["bert", "gpt", "gpt_past", "vit", "whisper"]);
    let mut seen = std::collections::BTreeSet::new();
    for case in &list {
        let report = pixelgrad_onnx::inspect::inspect_file(case.dir.join("model.onnx")).unwrap();
        let fused: Vec<&str> = report.operators.iter().filter(|o| o.domain == "com.microsoft").map(|o| o.op_type.as_str()).collect();
        assert!(fused.contains(&"SkipLayerNormalization"), "{}: {fused:?}", case.name);
        assert!(report.refused.is_empty(), "{}: {:?}", case.name, report.refused);
        seen.extend(fused.iter().map(|s| s.to_string()));
    }
    for op in ["Attention", "EmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu", "FastGelu", "Gelu"] {
        assert!(seen.contains(op), "no optimised model holds {op}: {seen:?}");
    }
    common::check_cases(&cpu(), "models", &list, 2);
}

/// `MatMul4BitsQuantizer` (blocks of 32, asymmetric; onnxruntime 1.20.1's default algorithm is
/// 4-bit only): relative error within 1e-4 of onnxruntime's on the same quantised graph (both
/// dequantise the blocks and multiply in f32, so they differ by rounding alone), the merged
/// decoder's branches included.
#[test]
fn matmulnbits_4bit_exports_match_onnxruntime() {
    let list = variant("nbits4", &ARCHS);
    for case in &list {
        let report = pixelgrad_onnx::inspect::inspect_file(case.dir.join("model.onnx")).unwrap();
        assert!(report.packed_weights.nodes > 0, "{}: no MatMulNBits", case.name);
    }
    common::check_cases(&cpu(), "models", &list, 2);
}

/// `quantize_dynamic` on the MatMuls (7-bit int8 weights, `reduce_range`; activations quantised
/// to u8 at run time by `DynamicQuantizeLinear`, `MatMulInteger`): relative error within 1e-4 of
/// onnxruntime's result on the same quantised graph. (Without `reduce_range`, onnxruntime's own
/// u8 x s8 sums saturate in 16-bit lanes on CPUs without VNNI, and its result moved up to 17% of
/// the output's range away from these exact sums, four times further than from the float
/// model.) The quantiser leaves the merged decoder's `If` branches in f32.
#[test]
fn dynamic_int8_exports_match_onnxruntime() {
    common::check_cases(&cpu(), "models", &variant("dynint8", &ARCHS), 2);
}

/// The exports saved with `save_as_external_data` (weights in `model.onnx_data` beside the model,
/// read from the model's folder).
#[test]
fn external_data_exports_match_onnxruntime() {
    let list = variant("external", &ARCHS);
    for case in &list {
        assert!(case.dir.join("model.onnx_data").exists(), "{}", case.name);
        let report = pixelgrad_onnx::inspect::inspect_file(case.dir.join("model.onnx")).unwrap();
        assert!(!report.external.is_empty(), "{}: no external tensors", case.name);
    }
    common::check_cases(&cpu(), "models", &list, 2);
}

/// A Llama-like decoder on opset 23 (`RMSNormalization`, `RotaryEmbedding` with `num_heads`,
/// grouped-key `Attention`: causal without a cache; with one, `past_key`/`past_value` in and
/// `present_key`/`present_value` out): within 1e-4 of the onnx reference evaluator.
#[test]
fn opset23_decoders_match_the_reference_evaluator() {
    let list = transformer_cases(Some("opset23"));
    let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["llama_opset23", "llama_past_opset23"]);
    common::check_cases(&cpu(), "models", &list, 2);
}

/// Every variant on WebGPU (lavapipe without a GPU), run once (the CPU tests above run every
/// case twice; replay on WebGPU is compared with graph walks in `ops_wgpu.rs`).
#[test]
fn every_variant_matches_on_wgpu() {
    common::check_cases(&wgpu(), "models", &transformer_cases(None), 1);
}

/// Every variant on WebGL2 (headless EGL, llvmpipe without a GPU), run once as on WebGPU.
#[test]
fn every_variant_matches_on_webgl() {
    let _one = one_context();
    common::check_cases(&webgl(), "models", &transformer_cases(None), 1);
}
