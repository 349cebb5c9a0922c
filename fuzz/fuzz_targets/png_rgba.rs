#![no_main]
include!("../harness/png_rgba.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
