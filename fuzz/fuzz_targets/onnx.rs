#![no_main]
include!("../harness/onnx.rs");

mod mutate {
    include!("../harness/onnx_mutate.rs");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

// Half of the mutations are structural (harness/onnx_mutate.rs: node inputs and outputs
// dropped, duplicated, reordered; operator types swapped; extreme attributes), the other half
// libFuzzer's own byte mutations, which also take over for inputs that do not decode.
libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    if seed % 2 == 0 {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    match mutate::mutate(&data[..size], u64::from(seed), max_size) {
        Some(out) => {
            data[..out.len()].copy_from_slice(&out);
            out.len()
        }
        None => libfuzzer_sys::fuzzer_mutate(data, size, max_size),
    }
});
