#![no_main]
include!("../harness/onnx_npy.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
