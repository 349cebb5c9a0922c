//! [`Op::MatMulNBits`](pixelgrad_core::Op::MatMulNBits): products with block-quantised weights
//! kept packed, forward (plain and transposed) and the gradient for `a`, against the weight
//! dequantised here in f64. 4-bit and 8-bit blocks, `k` a multiple of the block and not, `k`
//! longer than one CPU panel. Every backend must match, WebGL2 too (its shader reads the
//! packed bytes); the `webgl1` mode (no integer textures, `caps.int8` false) refuses the op
//! with a typed error, which is checked.

use pixelgrad_core::{BackendKind, Device, NBits, Tensor};

use crate::harness::{compare, read_f64, Read};
use crate::tolerance::{accumulate, GRAD_FACTOR};

type Outcome = std::result::Result<(), String>;

/// A packed weight of `n` rows and its dequantised `[k, n]` form, deterministic.
pub struct PackedWeight {
    pub q: Vec<u8>,
    pub scales: Vec<f32>,
    pub zeros: Vec<f32>,
    /// `W[k, n]`, row-major, in f64.
    pub w: Vec<f64>,
}

/// Packs deterministic values (every 4-bit or 8-bit value occurs) in onnxruntime's layout:
/// row `n`, block `b`, byte `j` at `(n * k_blocks + b) * blob + j`; 4-bit values two to a
/// byte, the even one in the low nibble; the tail of the last block holds values the product
/// must ignore.
pub fn packed_weight(g: NBits, n: usize) -> PackedWeight {
    let (kb, blob) = (g.k_blocks(), g.blob());
    let q: Vec<u8> = (0..n * kb * blob).map(|i| ((i * 37 + 11) % 256) as u8).collect();
    let blocks = n * kb;
    let scales: Vec<f32> = (0..blocks).map(|i| 0.01 + 0.003 * ((i * 7) % 11) as f32).collect();
    let top = ((1usize << g.bits) - 1) as f32;
    let zeros: Vec<f32> = (0..blocks).map(|i| ((i * 5 + 3) % (top as usize + 1)) as f32).collect();
    let mut w = vec![0f64; g.k * n];
    for nn in 0..n {
        for kk in 0..g.k {
            let (b, j) = (kk / g.block, kk % g.block);
            let start = (nn * kb + b) * blob;
            let v = if g.bits == 8 {
                q[start + j]
            } else if j % 2 == 0 {
                q[start + j / 2] & 15
            } else {
                q[start + j / 2] >> 4
            };
            let p = nn * kb + b;
            w[kk * n + nn] = (f64::from(v) - f64::from(zeros[p])) * f64::from(scales[p]);
        }
    }
    PackedWeight { q, scales, zeros, w }
}

/// The packed weight's three tensors on `dev`.
fn upload(dev: &Device, p: &PackedWeight, g: NBits, n: usize) -> pixelgrad_core::Result<[Tensor; 3]> {
    let kb = g.k_blocks();
    Ok([
        Tensor::from_u8(dev, &p.q, [n, kb * g.blob()])?,
        Tensor::from_vec(dev, &p.scales, [n, kb])?,
        Tensor::from_vec(dev, &p.zeros, [n, kb])?,
    ])
}

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len).map(|i| (((i * 31 + seed * 17) % 97) as f32 / 48.0) - 1.0).collect()
}

/// `x [r, c] * y [c, d]` in f64, `y` given transposed when `y_t` (`[d, c]`).
fn product(x: &[f64], r: usize, c: usize, y: &[f64], d: usize, y_t: bool) -> Vec<f64> {
    let mut o = vec![0.0; r * d];
    for i in 0..r {
        for j in 0..d {
            o[i * d + j] = (0..c).map(|p| x[i * c + p] * if y_t { y[j * c + p] } else { y[p * d + j] }).sum();
        }
    }
    o
}

pub async fn matmul_nbits(dev: &Device, read: Read) -> Outcome {
    let refuses = dev.backend().kind() == BackendKind::WebGl && !dev.backend().caps().int8;
    // (m, k, n, bits, block)
    let cases: &[(usize, usize, usize, usize, usize)] = &[
        (3, 40, 5, 4, 16),
        (2, 64, 7, 8, 32),
        (1, 33, 4, 4, 32),
        (5, 300, 9, 4, 32),
        (4, 20, 3, 8, 16),
        (2, 17, 130, 4, 16),
        // blocks that do not start on a 4-byte word (1 and 6 bytes), with rows enough for
        // WebGPU's four-rows-per-invocation kernel and a partial last group of rows
        (6, 10, 5, 4, 2),
        (9, 24, 3, 8, 6),
    ];
    for &(m, k, n, bits, block) in cases {
        let g = NBits { bits, block, k };
        let tag = format!("matmul_nbits [{m}, {k}] x {bits}-bit/{block} [{k}, {n}]");
        let err = |e: pixelgrad_core::Error| format!("{tag}: {e}");
        let p = packed_weight(g, n);
        let [q, s, z] = upload(dev, &p, g, n).map_err(err)?;
        let av = values(m * k, 1);
        let a = Tensor::from_vec(dev, &av, [m, k]).map_err(err)?.with_grad();
        let y = a.matmul_nbits(&q, &s, &z, g, false);
        if refuses {
            // WebGL1 refuses the op with a typed error naming it; the importer dequantises once.
            return match y {
                Err(e) if e.to_string().contains("matmul_nbits") => Ok(()),
                Err(e) => Err(format!("{tag}: WebGL1's refusal does not name the op: {e}")),
                Ok(_) => Err(format!("{tag}: WebGL1 ran matmul_nbits, which it is documented to refuse")),
            };
        }
        let y = y.map_err(err)?;
        let a64: Vec<f64> = av.iter().map(|&v| f64::from(v)).collect();
        let want = product(&a64, m, k, &p.w, n, false);
        compare(&tag, "output", &read_f64(&y, read).await.map_err(err)?, &want, accumulate(k).scaled(4.0))?;
        // dA = G W^T, from the packed weight (the transposed primitive)
        let rv = values(m * n, 2);
        let r = Tensor::from_vec(dev, &rv, [m, n]).map_err(err)?;
        y.mul(&r).and_then(|t| t.sum_all()).and_then(|l| l.backward()).map_err(err)?;
        let ga = a.grad().ok_or_else(|| format!("{tag}: no gradient for a"))?;
        let r64: Vec<f64> = rv.iter().map(|&v| f64::from(v)).collect();
        let want_ga = product(&r64, m, n, &p.w, k, true);
        compare(&tag, "gradient of a", &read_f64(&ga, read).await.map_err(err)?, &want_ga, accumulate(n).scaled(4.0 * GRAD_FACTOR))?;
        // the transposed product directly
        let t = r.matmul_nbits(&q, &s, &z, g, true).map_err(err)?;
        compare(&tag, "transposed output", &read_f64(&t, read).await.map_err(err)?, &want_ga, accumulate(n).scaled(4.0))?;
        // the weights are frozen: a backward pass that needs their gradient is an error
        let s2 = s.with_grad();
        let y2 = a.matmul_nbits(&q, &s2, &z, g, false).map_err(err)?;
        if y2.sum_all().and_then(|l| l.backward()).is_ok() {
            return Err(format!("{tag}: a gradient for the frozen scales was accepted"));
        }
    }
    Ok(())
}
