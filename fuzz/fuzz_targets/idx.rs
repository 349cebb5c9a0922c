#![no_main]
include!("../harness/idx.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
