//! Every kernel parses and validates with naga (no GPU needed), and every `.wgsl` file in
//! `src/kernels` is a registered kernel.

use crate::pipelines::{full_source, prelude, Kernel};
use crate::wgsl::{map_source, with_fused_input};
use crate::{image, ops};

/// Every kernel: those the ops launch and the image kernels.
fn all_kernels() -> Vec<&'static Kernel> {
    let mut all = ops::all_kernels();
    all.extend([&image::FROM_PIXELS, &image::YUV_TO_RGBA]);
    all
}

fn validate(name: &str, src: &str) {
    let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{name}.wgsl does not parse:\n{}", e.emit_to_string(src)));
    // Subgroup operations: the shared-A register matmuls broadcast A across lanes.
    // f16 for the shader-f16 matmul.
    let caps = naga::valid::Capabilities::default() | naga::valid::Capabilities::SUBGROUP | naga::valid::Capabilities::SHADER_FLOAT16;
    let mut v = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
    if let Err(e) = v.validate(&module) {
        panic!("{name}.wgsl does not validate:\n{}", e.emit_to_string(src));
    }
}

#[test]
fn every_kernel_validates_with_naga() {
    for k in all_kernels() {
        validate(&k.name, &full_source(k));
    }
    validate("prelude", prelude());
}

/// Every program with loops, those a hand-written kernel runs instead (im2col, col2im) too.
#[test]
fn every_program_renders_to_valid_wgsl() {
    for p in pixelgrad_core::kernel::programs::KernelProgram::ALL {
        validate(p.name(), &full_source(crate::ops::programs::program_kernel(p)));
    }
}

#[test]
fn every_elementwise_definition_renders_to_valid_wgsl() {
    for (name, k) in pixelgrad_core::kernel::defs::all().unwrap() {
        let src = format!("{}\n{}", prelude(), map_source(&k).unwrap());
        validate(&name, &src);
        // The same computation as a reduction's fused input.
        let reduce = crate::ops::reduce::REDUCE.source.as_ref();
        let src = format!("{}\n{}", prelude(), with_fused_input(reduce, &k, crate::ops::reduce::OWN_WORDS).unwrap());
        validate(&format!("reduce of {name}"), &src);
    }
}

/// The tiled matmuls storing an epilogue (a binary definition, its other input read by
/// strides and one element wide) validate too: the epilogue is rendered into their store.
#[test]
fn tiled_matmul_epilogues_validate_with_naga() {
    let add = pixelgrad_core::BinaryOp::Add.kernel().unwrap();
    for (fast, scalars) in [(false, 0), (true, 0), (true, 2)] {
        let epi = crate::wgsl::Epilogue { kernel: add.clone(), given: 0, fast, scalars };
        for k in crate::ops::matmul::tiled_with(&epi, 6) {
            validate(&k.name, &full_source(k));
        }
    }
}

#[test]
fn every_wgsl_file_is_a_kernel() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kernels");
    let names: Vec<&str> = all_kernels().iter().map(|k| k.name.as_ref()).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        // shared functions put before kernels, not kernels themselves
        if stem == "common" || stem == "half_bits" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(names.contains(&stem.as_str()), "{} is not registered in ops::all_kernels (or the image kernels)", path.display());
        // The registered source is this file's text (after any shared functions it uses).
        let k = all_kernels().into_iter().find(|k| k.name == stem).unwrap();
        assert!(k.source.ends_with(&text), "{}: the registered source is not the file", path.display());
    }
}
