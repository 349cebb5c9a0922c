#![no_main]
include!("../harness/png.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
