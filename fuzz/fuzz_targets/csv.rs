#![no_main]
include!("../harness/csv.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
