//! The product sweep `matmul_paths.rs` and `matmul_rendered.rs` share: shapes chosen to cross
//! every hand-written matmul path (the 4x4-block path, repacking, strided reads, a decode-like
//! row), each with every transpose combination, their operands, and the closeness check
//! against the CPU.

use pixelgrad_core::{Device, Tensor};

/// `n` values in [-1, 1) from `seed`.
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n).map(|i| pixelgrad_core::rng::uniform(seed, i as u64) * 2.0 - 1.0).collect()
}

/// (batch of A, batch of B, m, k, n); None = rank 2.
type Geometry = (Option<usize>, Option<usize>, usize, usize, usize);

const SHAPES: &[Geometry] = &[
    // Block path: aligned, and every size odd.
    (None, None, 128, 64, 128),
    (None, None, 130, 70, 121),
    (Some(20), Some(20), 37, 33, 45),
    // Block path with one matrix broadcast over the batch (the conv forward pass).
    (None, Some(6), 16, 72, 121),
    (Some(5), None, 40, 48, 68),
    // One-target kernel with its operands repacked: above the strided kernel's limit.
    (None, None, 64, 70, 63),
    // One-target kernel: small products, K or N not a multiple of 4 (read where they lie).
    (None, None, 8, 12, 16),
    (None, None, 9, 10, 7),
    (Some(3), Some(3), 5, 9, 6),
    // One row against a long k (a decoder's next token).
    (None, None, 1, 300, 33),
];

/// One product of the sweep: `a [da]` (transposed if `ta`) times `b [db]` (if `tb`).
pub struct Product {
    pub da: Vec<usize>,
    pub db: Vec<usize>,
    pub ta: bool,
    pub tb: bool,
    /// (batch of A, batch of B, m, k, n) before transposing.
    pub geometry: Geometry,
    va: Vec<f32>,
    vb: Vec<f32>,
}

impl Product {
    /// The product on `dev`, read back.
    pub fn run(&self, dev: &Device) -> Vec<f32> {
        let a = Tensor::from_vec(dev, &self.va, self.da.clone()).unwrap();
        let b = Tensor::from_vec(dev, &self.vb, self.db.clone()).unwrap();
        a.matmul_t(&b, self.ta, self.tb).unwrap().to_vec().unwrap()
    }

    /// Asserts `got` is the CPU's `want` within `1e-5 k` relative; `what` says where.
    pub fn assert_close(&self, got: &[f32], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        let (da, db, ta, tb) = (&self.da, &self.db, self.ta, self.tb);
        let tol = 1e-5 * self.geometry.3 as f32;
        for (j, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() <= tol * w.abs().max(1.0), "{da:?}{ta} x {db:?}{tb} ({what}) element {j}: {g} vs {w}");
        }
    }
}

/// Every shape with every transpose combination, operands drawn from fixed seeds.
pub fn products() -> Vec<Product> {
    let mut out = Vec::new();
    for (i, &(ba, bb, m, k, n)) in SHAPES.iter().enumerate() {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut da = if ta { vec![k, m] } else { vec![m, k] };
            let mut db = if tb { vec![n, k] } else { vec![k, n] };
            if let Some(b) = ba {
                da.insert(0, b);
            }
            if let Some(b) = bb {
                db.insert(0, b);
            }
            let va = values(da.iter().product(), 2 * i as u64);
            let vb = values(db.iter().product(), 2 * i as u64 + 1);
            out.push(Product { da, db, ta, tb, geometry: (ba, bb, m, k, n), va, vb });
        }
    }
    out
}
