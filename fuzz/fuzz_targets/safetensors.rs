#![no_main]
include!("../harness/safetensors.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
