//! Test data and references for the narrow storage types (8-bit and f16) and their ops
//! (`matmul_i8`, `widen`), shared by every backend's tests so each compares against the same
//! values and the same reference.

use pixelgrad_core::half::f16;
use pixelgrad_core::{Backend, BackendKind, Op, Result, Shape, Storage};

/// Small deterministic generator (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
}

/// `a [ga?, m, k]` times `b [gb?, k, n]` in i64, then as `Op::MatMulI8` defines it: wrapped to
/// i32, rounded to f32. Returns the result's dims and values.
pub fn matmul_i8_reference(a: &[i64], a_dims: &[usize], b: &[i64], b_dims: &[usize]) -> (Vec<usize>, Vec<f32>) {
    let (m, k) = (a_dims[a_dims.len() - 2], a_dims[a_dims.len() - 1]);
    let n = b_dims[b_dims.len() - 1];
    let ga = if a_dims.len() == 3 { a_dims[0] } else { 1 };
    let gb = if b_dims.len() == 3 { b_dims[0] } else { 1 };
    let g = ga.max(gb);
    let mut out = Vec::with_capacity(g * m * n);
    for bi in 0..g {
        let ao = if ga > 1 { bi * m * k } else { 0 };
        let bo = if gb > 1 { bi * k * n } else { 0 };
        for i in 0..m {
            for j in 0..n {
                let acc: i64 = (0..k).map(|p| a[ao + i * k + p] * b[bo + p * n + j]).sum();
                out.push(acc as i32 as f32);
            }
        }
    }
    let dims = if a_dims.len() == 2 && b_dims.len() == 2 { vec![m, n] } else { vec![g, m, n] };
    (dims, out)
}

/// Sizes off every multiple of 2 and 4 (the packings) and past 256-wide workgroups and
/// 4096-element blocks.
pub const SIZES: [usize; 5] = [1, 3, 5, 1023, 4097];

/// Half bit patterns worth checking one by one: ±0, the smallest and largest subnormals, the
/// smallest normal, ±max finite, ±inf, quiet and signalling NaNs of both signs, 1, -2, 1/3.
pub const SPECIAL_F16: [u16; 16] =
    [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfc01, 0x3c00, 0xc000, 0x3555];

/// `n` half values: the specials first, then bit patterns spread over all 65536 (an odd
/// multiplier visits each once), so every exponent and both signs appear.
pub fn halves(n: usize) -> Vec<f16> {
    (0..n).map(|i| f16::from_bits(SPECIAL_F16.get(i).copied().unwrap_or((i as u32).wrapping_mul(40503) as u16))).collect()
}

/// `n` i8 values covering all 256.
pub fn i8s(n: usize) -> Vec<i8> {
    (0..n).map(|i| ((i * 37 + 11) % 256) as u8 as i8).collect()
}

/// `n` u8 values covering all 256.
pub fn u8s(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 101 + 7) % 256) as u8).collect()
}

/// Bit-exact comparison, except that any NaN matches any NaN (payloads may be quietened).
pub fn assert_same(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() { g.is_nan() } else { g.to_bits() == w.to_bits() };
        assert!(ok, "{what}: element {i}: got {g} ({:#010x}), want {w} ({:#010x})", g.to_bits(), w.to_bits());
    }
}

/// A backend that forwards only the f32 basics to `B` and keeps the trait's defaults for the
/// rest: no 8-bit or f16 storage, no counters, named `"f32-only"`. Tests the fallbacks.
pub struct F32Only<B>(pub B);

impl<B: Backend> Backend for F32Only<B> {
    fn kind(&self) -> BackendKind {
        self.0.kind()
    }
    fn name(&self) -> String {
        "f32-only".into()
    }
    fn upload(&self, data: &[f32]) -> Result<Storage> {
        self.0.upload(data)
    }
    fn execute(&self, op: &Op, i: &[&Storage], s: &[&Shape], o: &Shape) -> Result<Storage> {
        self.0.execute(op, i, s, o)
    }
    fn read(&self, s: &Storage, len: usize) -> Result<Vec<f32>> {
        self.0.read(s, len)
    }
}
