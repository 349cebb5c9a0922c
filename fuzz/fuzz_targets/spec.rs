#![no_main]
include!("../harness/spec.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
