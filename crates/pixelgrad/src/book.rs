//! The README and every chapter of the book (`docs/src`) as doc tests: `cargo test -p pixelgrad
//! --doc` compiles each Rust code block and runs those not marked `no_run`, so an example in the
//! docs cannot drift from the API. Blocks of shell commands or output are marked `sh` / `text`;
//! `scripts/book-links.mjs` refuses unmarked and `ignore` blocks.

#[doc = include_str!("../../../README.md")]
mod readme {}

macro_rules! chapters {
    ($($name:ident = $path:literal;)*) => {
        $(
            #[doc = include_str!(concat!("../../../docs/src/", $path))]
            mod $name {}
        )*
    };
}

chapters! {
    introduction = "introduction.md";
    guide_browser = "guides/browser-training.md";
    guide_rust = "guides/rust.md";
    guide_cli = "guides/cli.md";
    guide_transformers = "guides/transformers.md";
    guide_onnx = "guides/onnx.md";
    guide_tokenizers = "guides/tokenizers.md";
    guide_quantised = "guides/quantised.md";
    guide_images = "guides/images.md";
    guide_mixed = "guides/mixed-precision.md";
    guide_federated = "guides/federated.md";
    guide_webgl1 = "guides/webgl1.md";
    guide_debugging = "guides/debugging.md";
    design_architecture = "design/architecture.md";
    design_kernel_ir = "design/kernel-ir.md";
    design_fusion = "design/fusion.md";
    design_step_replay = "design/step-replay.md";
    design_reliability = "design/reliability.md";
    design_webgpu = "design/webgpu.md";
    design_webgl = "design/webgl.md";
    design_layout = "design/layout.md";
    contributing_adding_an_op = "contributing/adding-an-op.md";
    contributing_testing = "contributing/testing.md";
    contributing_benchmarking = "contributing/benchmarking.md";
    security = "security.md";
}
