#![no_main]
include!("../harness/onnx.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
