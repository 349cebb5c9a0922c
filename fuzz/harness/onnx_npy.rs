// The ONNX crate's `.npy` reader (what `pixelgrad run --input NAME=FILE.npy` reads): decode,
// and for what decodes, write it back and read that again: the two encodings must match
// byte for byte (what the reader accepts, the writer can write).
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/onnx_npy.rs` and the stable test
// `crates/pixelgrad-onnx/tests/fuzz_harness.rs` (seeds in `fuzz/corpus/onnx_npy/`, written by
// `seeds()` below, and the regressions): any panic is a bug.
use pixelgrad_onnx::npy;

pub fn run(data: &[u8]) {
    let Ok(t) = npy::read(data) else { return };
    let Ok(once) = npy::write(&t) else { return };
    let again = npy::read(&once).unwrap_or_else(|e| panic!("npy::write gave a file npy::read refuses: {e}"));
    let twice = npy::write(&again).unwrap_or_else(|e| panic!("npy::write refused what npy::read gave: {e}"));
    assert!(once == twice, "a .npy file read back differently from how it was written");
}

/// The seeds: one small array of every element type the reader takes, a scalar, a 3-D array
/// and a version 2 header.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    use pixelgrad_onnx::{DType, Data, HostTensor};
    let cases = [
        ("f32", HostTensor::f32(vec![2, 3], vec![1.0, -2.5, 3.25, 0.0, 1e-3, 7.0])),
        ("f16", HostTensor { dtype: DType::F16, shape: vec![3], data: Data::F32(vec![0.5, -1.0, 2048.0]) }),
        ("i64", HostTensor::i64(vec![2], vec![-7, 1 << 40])),
        ("i32", HostTensor::ints(DType::I32, vec![2, 1], vec![-3, 70000])),
        ("u8", HostTensor::ints(DType::U8, vec![1, 2, 2], vec![0, 1, 254, 255])),
        ("i8", HostTensor::ints(DType::I8, vec![4], vec![-128, -1, 0, 127])),
        ("bool", HostTensor::ints(DType::Bool, vec![3], vec![1, 0, 1])),
        ("scalar", HostTensor::f32(vec![], vec![4.0])),
        ("image", HostTensor::f32(vec![1, 2, 2, 2], (0..8).map(|i| i as f32 / 8.0).collect())),
    ];
    let mut out: Vec<(String, Vec<u8>)> =
        cases.into_iter().map(|(n, t)| (format!("{n}.npy"), npy::write(&t).unwrap_or_default())).collect();
    // version 2: the same header with a 4-byte length
    if let Some((_, v1)) = out.first() {
        if v1.len() >= 10 {
            let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
            let hlen = u16::from_le_bytes([v1[8], v1[9]]) as u32;
            v2.extend(hlen.to_le_bytes());
            v2.extend(&v1[10..]);
            out.push(("v2.npy".into(), v2));
        }
    }
    out
}
