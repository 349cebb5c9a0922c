#![no_main]
include!("../harness/flower_message.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
