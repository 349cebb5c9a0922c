//! The product with block-quantised weights kept packed ([`pixelgrad_core::Op::MatMulNBits`]):
//! the weight stays as the bytes onnxruntime's `MatMulNBits` stores (4 or 8 bits a value, one
//! scale and zero point per block of `block` values along `k`), and the product dequantises
//! one panel of it at a time, in its packing step: [`PANEL`] rows of `W [k, N]` (whole
//! blocks) into a scratch panel, multiplied by [`Element::gemm`] (the optimised GEMM on the
//! fast path, plain loops on the f64 reference) and added to the result. The only f32 memory
//! besides the result is that panel (`PANEL x N` values), never a copy of the whole weight.

use pixelgrad_core::{NBits, Result};

use crate::element::Element;

/// Rows of `W` (values along `k`) dequantised per GEMM call, rounded to whole blocks.
const PANEL: usize = 256;

/// The packed weight and its per-block parameters, all checked against the shapes by
/// `Op::infer_shape` (`q` holds `n * k_blocks * blob` bytes, `scales` and `zeros`
/// `n * k_blocks` values).
pub(crate) struct Packed<'a, T> {
    pub q: &'a [u8],
    pub scales: &'a [T],
    pub zeros: &'a [T],
    pub n: usize,
    pub g: NBits,
}

impl<T: Element> Packed<'_, T> {
    /// `W[k0 .. k0 + rows, 0 .. n]` dequantised into `panel` (row-major, `rows x n`), one
    /// block at a time (its scale and zero point read once); `k0` starts a block.
    fn dequantise(&self, k0: usize, rows: usize, panel: &mut [T]) {
        let (kb, blob, block) = (self.g.k_blocks(), self.g.blob(), self.g.block);
        let end = k0 + rows;
        for nn in 0..self.n {
            for b in k0 / block..end.div_ceil(block) {
                let p = nn * kb + b;
                let (s, z) = (self.scales[p], self.zeros[p]);
                let bytes = &self.q[p * blob..(p + 1) * blob];
                let j0 = b * block;
                for i in 0..block.min(end - j0) {
                    let v = if self.g.bits == 8 {
                        bytes[i]
                    } else if i.is_multiple_of(2) {
                        bytes[i / 2] & 15
                    } else {
                        bytes[i / 2] >> 4
                    };
                    panel[(j0 - k0 + i) * self.n + nn] = (T::from_f64(f64::from(v)) - z) * s;
                }
            }
        }
    }

    /// Rows of `W` per panel: whole blocks, about [`PANEL`].
    fn panel_rows(&self) -> usize {
        let b = self.g.block.max(1);
        b * (PANEL / b).max(1)
    }
}

/// `a [m, k] x W [k, n]` (`trans` false, result `[m, n]`) or `a [m, n] x W^T` (`trans`,
/// result `[m, k]`), `W` dequantised a panel at a time.
pub(crate) fn matmul_nbits<T: Element>(a: &[T], m: usize, w: &Packed<'_, T>, trans: bool) -> Result<Vec<T>> {
    let (k, n) = (w.g.k, w.n);
    let out_cols = if trans { k } else { n };
    let mut out = vec![T::ZERO; m * out_cols];
    if m == 0 || k == 0 || n == 0 {
        return Ok(out);
    }
    let step = w.panel_rows();
    let mut panel = vec![T::ZERO; step.min(k) * n];
    let mut part = vec![T::ZERO; m * if trans { step.min(k) } else { n }];
    let mut k0 = 0;
    while k0 < k {
        let rows = step.min(k - k0);
        let panel = &mut panel[..rows * n];
        w.dequantise(k0, rows, panel);
        if trans {
            // out[:, k0 .. k0 + rows] = a [m, n] x panel^T ([n, rows]: element (nn, r) at r * n + nn)
            let part = &mut part[..m * rows];
            T::gemm(m, n, rows, a, n, 1, panel, 1, n, part)?;
            for i in 0..m {
                for r in 0..rows {
                    out[i * k + k0 + r] = part[i * rows + r];
                }
            }
        } else {
            // out += a[:, k0 .. k0 + rows] x panel
            T::gemm(m, rows, n, &a[k0..], k, 1, panel, n, 1, &mut part)?;
            for (o, &p) in out.iter_mut().zip(part.iter()) {
                *o += p;
            }
        }
        k0 += rows;
    }
    Ok(out)
}

impl crate::CpuBackend {
    /// [`pixelgrad_core::Op::MatMulNBits`]: `a`, `scales` and `zeros` of this mode's
    /// precision, `q` bytes (u8 storage, or whole numbers 0 to 255 of this mode's floats).
    pub(crate) fn matmul_nbits(
        &self,
        op: &pixelgrad_core::Op,
        inputs: &[&pixelgrad_core::Storage],
        shapes: &[&pixelgrad_core::Shape],
        out: &pixelgrad_core::Shape,
    ) -> Result<crate::CpuStorage> {
        use crate::{CpuStorage, Mode};
        use pixelgrad_core::{Backend, Error, Op};
        let name = self.name();
        let &Op::MatMulNBits { bits, block, k, trans } = op else {
            return Err(Error::backend(op.name(), name, "internal: not matmul_nbits"));
        };
        if inputs.len() != 4 {
            return Err(Error::backend(op.name(), name, format!("expects 4 inputs, got {}", inputs.len())));
        }
        let data = inputs.iter().map(|s| self.mine(op.name(), s)).collect::<Result<Vec<_>>>()?;
        let lens: Vec<usize> = data.iter().map(|d| d.len()).collect();
        pixelgrad_core::check_execute(op, &lens, shapes, out, &name)?;
        let shape_err =
            |msg: String| Error::Shape { op: op.name(), shapes: shapes.iter().map(|s| s.0.clone()).collect(), backend: name.clone(), msg };
        let whole_byte = |v: f64| v == v.trunc() && (0.0..=255.0).contains(&v);
        let bytes: std::borrow::Cow<'_, [u8]> = match data[1] {
            CpuStorage::U8(v) => std::borrow::Cow::Borrowed(v.as_slice()),
            CpuStorage::F32(v) if v.iter().all(|&x| whole_byte(f64::from(x))) => v.iter().map(|&x| x as u8).collect(),
            CpuStorage::F64(v) if v.iter().all(|&x| whole_byte(x)) => v.iter().map(|&x| x as u8).collect(),
            other => {
                return Err(shape_err(format!(
                    "input 1 has {} storage; it must be packed bytes (u8, or whole numbers 0 to 255)",
                    other.dtype()
                )))
            }
        };
        let g = NBits { bits, block, k };
        let (m, n) = (shapes[0].0[0], shapes[1].0[0]);
        macro_rules! run {
            ($variant:ident) => {
                match (data[0], data[2], data[3]) {
                    (CpuStorage::$variant(a), CpuStorage::$variant(s), CpuStorage::$variant(z)) => {
                        let w = Packed { q: &bytes, scales: s, zeros: z, n, g };
                        CpuStorage::$variant(matmul_nbits(a, m, &w, trans)?)
                    }
                    _ => return Err(shape_err("a, scales and zeros must have this mode's float storage".into())),
                }
            };
        }
        Ok(match self.mode {
            Mode::Fast => run!(F32),
            Mode::Reference => run!(F64),
        })
    }
}
