//! onnxruntime's block-quantised weights (`com.microsoft`): `MatMulNBits`, the matrix product
//! whose weight its `MatMulNBitsQuantizer` stores as 4-bit (or 8-bit) unsigned integers in
//! blocks of `block_size` values along `K`, each block with its own scale and zero point
//! (`docs/ContribOperators.md`, `matmul_nbits.cc`); and `GatherBlockQuantized`, the embedding
//! lookup of `int4` / `uint4` data with a scale (and zero point) per block of `block_size`
//! values along `quantize_axis` (`gather_block_quantized.cc`).
//!
//! Layout, as onnxruntime reads it: `B` is `uint8 [N, k_blocks, blob]` with
//! `k_blocks = ceil(K / block_size)` and `blob = block_size · bits / 8`; 4-bit values two to a
//! byte, the even `k` in the low nibble. `scales` holds `N · k_blocks` values (row `n`, block
//! `b` at `n · k_blocks + b`). `zero_points` is either `uint8`, packed like `B` along the
//! blocks (`ceil(k_blocks · bits / 8)` bytes per row), or of the scales' type, one per block;
//! without it the zero point is `2^(bits-1)`. `W[k, n] = (q - zero_point) · scale`.
//!
//! Where the weights live: on the CPU, WebGPU and WebGL2 the packed `B` stays packed on the
//! device (one byte per stored byte: u8 storage, four bytes per u32 word on WebGPU, an
//! `RGBA8UI` texture on WebGL2) with its scales and zero points as f32 `[N, k_blocks]`, and
//! [`pixelgrad_core::Op::MatMulNBits`] dequantises the blocks inside the product; the session
//! caches those three tensors like any constant. The `webgl1` mode has no kernel for that op
//! (no integer textures): there the packed blocks are dequantised to an `f32` `[K, N]` matrix
//! on the host the first time the node runs and that device copy is kept, 8 times (4-bit) or
//! 4 times (8-bit) the bytes the file stores. `pixelgrad inspect`
//! and `m.info` say so for the operator ([`super::registry::OpRow::note`]) and report both
//! sizes (`packedWeights`). `GatherBlockQuantized`'s table is dequantised to f32 on every
//! backend.

use pixelgrad_core::{BackendKind, Device, NBits, Tensor};

use super::context::{upload, Cx, V};
use super::linalg;
use super::movement::gather_along;
use crate::host::{DType, HostTensor};
use crate::shapes::norm_axis;
use crate::Result;

/// What inspect reports of `MatMulNBits`.
pub const MATMUL_NBITS_NOTE: &str = "weights kept packed on cpu, webgpu and webgl2 (4/8-bit blocks dequantised inside the matmul); webgl1 dequantises them to f32 once, when the node first runs (8x the packed bytes for 4-bit, 4x for 8-bit)";

/// Whether `dev` keeps `MatMulNBits` weights packed ([`pixelgrad_core::Op::MatMulNBits`]):
/// every backend but WebGL1 (`caps.int8` false: no integer textures), which has no kernel
/// for it.
pub fn packed_on(dev: &Device) -> bool {
    dev.kind() != BackendKind::WebGl || dev.backend().caps().int8
}

/// What inspect reports of `GatherBlockQuantized`.
pub const GATHER_BLOCK_QUANTIZED_NOTE: &str = "4-bit table dequantised to f32 on the device when the node first runs (8x the file's bytes)";

/// The largest `K` or `N` read (larger is refused before anything is sized by it).
const MAX_DIM: i64 = 1 << 24;

/// The checked attributes of one `MatMulNBits` node.
struct Layout {
    k: usize,
    n: usize,
    bits: usize,
    block: usize,
    k_blocks: usize,
    blob: usize,
}

fn layout(cx: &Cx) -> Result<Layout> {
    let node = cx.node;
    node.only_attrs(&["K", "N", "bits", "block_size", "accuracy_level"])?;
    let dim = |name: &str| -> Result<usize> {
        let v = node.int(name, 0)?;
        if !(1..=MAX_DIM).contains(&v) {
            return Err(cx.err(format!("attribute '{name}' is {v}; it must be 1 to {MAX_DIM}")));
        }
        Ok(v as usize)
    };
    let (k, n) = (dim("K")?, dim("N")?);
    let bits = node.int("bits", 0)?;
    if bits != 4 && bits != 8 {
        return Err(cx.err(format!("attribute 'bits' is {bits}; pixelgrad reads 4-bit and 8-bit blocks")));
    }
    let block = node.int("block_size", 0)?;
    if !(16..=MAX_DIM).contains(&block) || block & (block - 1) != 0 {
        return Err(cx.err(format!("attribute 'block_size' is {block}; it must be a power of two, at least 16")));
    }
    // accuracy_level is the least precision onnxruntime may compute with (4: int8 activations);
    // pixelgrad always computes in f32, which meets every level
    let level = node.int("accuracy_level", 0)?;
    if !(0..=4).contains(&level) {
        return Err(cx.err(format!("attribute 'accuracy_level' is {level}; it must be 0 to 4")));
    }
    let (bits, block) = (bits as usize, block as usize);
    let k_blocks = k.div_ceil(block);
    Ok(Layout { k, n, bits, block, k_blocks, blob: block * bits / 8 })
}

/// `com.microsoft` `MatMulNBits`: `A [.., K]` times the block-quantised `[K, N]` weight, plus
/// the optional `bias [N]`. `g_idx` (act-order block indices) is refused.
pub(super) fn matmul_nbits(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let l = layout(cx)?;
    if cx.opt(ins, 4).is_some() {
        return Err(cx.err("input 4 (g_idx, act-order block indices) is not supported; quantise without act-order"));
    }
    let dt = cx.dtype0(ins);
    if !dt.is_float() {
        return Err(cx.err(format!("input A is {dt}; MatMulNBits takes float")));
    }
    let a = cx.t(ins, 0)?;
    if a.dims().last() != Some(&l.k) {
        return Err(cx.err(format!("input A has shape {:?}; its last axis must be K = {}", a.dims(), l.k)));
    }
    let mut y = if packed_on(cx.dev()) {
        let [q, sc, z] = packed(cx, ins, &l)?;
        let dims = a.dims().to_vec();
        let m: usize = dims[..dims.len() - 1].iter().product();
        let a2 = a.reshape([m, l.k])?;
        let y = a2.matmul_nbits(&q, &sc, &z, NBits { bits: l.bits, block: l.block, k: l.k }, false)?;
        let mut out = dims[..dims.len() - 1].to_vec();
        out.push(l.n);
        y.reshape(out)?
    } else {
        cx.check_size(&[l.k, l.n])?;
        let w = weight(cx, ins, &l)?;
        linalg::matmul(cx, &a, &w)?
    };
    if cx.opt(ins, 5).is_some() {
        let b = cx.t(ins, 5)?;
        if b.dims() != [l.n] {
            return Err(cx.err(format!("bias (input 5) has shape {:?}; expected [N] = [{}]", b.dims(), l.n)));
        }
        y = y.add(&b)?;
    }
    Ok(vec![V::dev(y, dt)])
}

/// The dequantised `[K, N]` weight on the device: the session's cached copy when `B` is a
/// named constant (dequantised once), otherwise dequantised now.
fn weight(cx: &Cx, ins: &[Option<V>], l: &Layout) -> Result<Tensor> {
    let names = [1, 2, 3].map(|i| match cx.opt(ins, i) {
        Some(V::Host { name: Some(n), .. }) => Some(n.to_string()),
        _ => None,
    });
    let make = || -> Result<HostTensor> { dequantize(cx, ins, l) };
    match names {
        [Some(b), Some(s), z] if z.is_some() || cx.opt(ins, 3).is_none() => {
            let key = format!("{b}\u{0}MatMulNBits f32\u{0}{s}\u{0}{}\u{0}{}x{}/{}", z.unwrap_or_default(), l.k, l.n, l.block);
            cx.consts.cached_derived(&key, &make)
        }
        _ => upload(cx.dev(), &make()?, &format!("the dequantised weight of node '{}'", cx.node.name)),
    }
}

/// The packed weight `[N, k_blocks * blob]` (u8), its scales and its zero points (f32
/// `[N, k_blocks]`) on the device: the session's cached copies when `B`, `scales` (and
/// `zero_points`) are named constants, otherwise made now.
fn packed(cx: &Cx, ins: &[Option<V>], l: &Layout) -> Result<[Tensor; 3]> {
    let names = [1, 2, 3].map(|i| match cx.opt(ins, i) {
        Some(V::Host { name: Some(n), .. }) => Some(n.to_string()),
        _ => None,
    });
    let dev = cx.dev();
    let rows = [l.n, l.k_blocks * l.blob];
    let blocks = [l.n, l.k_blocks];
    let make = |part: usize| -> Result<Tensor> {
        let p = parts(cx, ins, l)?;
        Ok(match part {
            0 => Tensor::from_u8(dev, &p.q, rows)?,
            1 => Tensor::from_vec(dev, &p.scales, blocks)?,
            _ => Tensor::from_vec(dev, &p.zeros, blocks)?,
        })
    };
    match names {
        [Some(b), Some(s), z] if z.is_some() || cx.opt(ins, 3).is_none() => {
            let key =
                format!("{b}\u{0}MatMulNBits packed\u{0}{s}\u{0}{}\u{0}{}x{}/{}/{}", z.unwrap_or_default(), l.k, l.n, l.block, l.bits);
            let get = |part: usize, what: &str| cx.consts.cached_tensor(&format!("{key}\u{0}{what}"), &|| make(part));
            Ok([get(0, "q")?, get(1, "scales")?, get(2, "zeros")?])
        }
        _ => {
            let p = parts(cx, ins, l)?;
            Ok([Tensor::from_u8(dev, &p.q, rows)?, Tensor::from_vec(dev, &p.scales, blocks)?, Tensor::from_vec(dev, &p.zeros, blocks)?])
        }
    }
}

/// The packed bytes of `B` as stored, and one scale and zero point per block (`[N, k_blocks]`).
struct Parts {
    q: Vec<u8>,
    scales: Vec<f32>,
    zeros: Vec<f32>,
}

/// `B`, `scales` and `zero_points` after checking their types and sizes against the node's
/// attributes; zero points unpacked to one f32 per block (`2^(bits-1)` without them).
fn parts(cx: &Cx, ins: &[Option<V>], l: &Layout) -> Result<Parts> {
    let b = cx.h(ins, 1, "the packed weight B")?;
    if b.dtype != DType::U8 {
        return Err(cx.err(format!("input B is {}; pixelgrad reads uint8 blocks", b.dtype)));
    }
    let want = [l.n, l.k_blocks, l.blob];
    if b.shape != want {
        return Err(cx.err(format!(
            "input B has shape {:?}; K = {}, N = {}, bits = {}, block_size = {} make it [N, k_blocks, blob] = {want:?}",
            b.shape, l.k, l.n, l.bits, l.block
        )));
    }
    let s = cx.h(ins, 2, "scales")?;
    let blocks = l.n * l.k_blocks;
    if !s.dtype.is_float() || s.numel() != blocks {
        return Err(cx.err(format!("scales has type {} and shape {:?}; expected {blocks} floats (N x k_blocks)", s.dtype, s.shape)));
    }
    let scales = s.to_f32();
    let half = (1u32 << (l.bits - 1)) as f32;
    let zero: Vec<f32> = match cx.opt_h(ins, 3, "zero_points")? {
        None => vec![half; blocks],
        Some(z) if z.dtype == DType::U8 => {
            let per_row = (l.k_blocks * l.bits).div_ceil(8);
            if z.numel() != l.n * per_row {
                return Err(cx.err(format!(
                    "zero_points (uint8) has shape {:?}; packed {}-bit it holds {per_row} bytes for each of N = {} rows",
                    z.shape, l.bits, l.n
                )));
            }
            let zb = z.to_f32();
            (0..blocks).map(|i| nibble(&zb, i / l.k_blocks * per_row, i % l.k_blocks, l.bits)).collect()
        }
        Some(z) if z.dtype.is_float() => {
            if z.numel() != blocks {
                return Err(cx.err(format!("zero_points ({}) has shape {:?}; expected {blocks} values like scales", z.dtype, z.shape)));
            }
            z.to_f32()
        }
        Some(z) => return Err(cx.err(format!("zero_points is {}; expected uint8 or the scales' type", z.dtype))),
    };
    // uint8 bytes as f32 are whole numbers 0 to 255: exact
    let q = b.to_f32().into_iter().map(|v| v as u8).collect();
    Ok(Parts { q, scales, zeros: zero })
}

/// The `[K, N]` f32 weight the packed `B`, `scales` and `zero_points` describe (WebGL, which
/// has no kernel for the packed product).
fn dequantize(cx: &Cx, ins: &[Option<V>], l: &Layout) -> Result<HostTensor> {
    let p = parts(cx, ins, l)?;
    let q: Vec<f32> = p.q.iter().map(|&v| f32::from(v)).collect();
    let mut w = vec![0f32; l.k * l.n];
    for n in 0..l.n {
        let row = n * l.k_blocks * l.blob;
        for k in 0..l.k {
            let blk = n * l.k_blocks + k / l.block;
            let v = nibble(&q, row + (k / l.block) * l.blob, k % l.block, l.bits);
            w[k * l.n + n] = (v - p.zeros[blk]) * p.scales[blk];
        }
    }
    Ok(HostTensor::f32(vec![l.k, l.n], w))
}

/// Value `i` of the packed run of bytes starting at `start` (bytes as f32: 0 to 255): a whole
/// byte for 8 bits, for 4 bits the low nibble of byte `i / 2` when `i` is even, else the high.
fn nibble(bytes: &[f32], start: usize, i: usize, bits: usize) -> f32 {
    if bits == 8 {
        return bytes[start + i];
    }
    let byte = bytes[start + i / 2] as u32;
    (if i.is_multiple_of(2) { byte & 15 } else { byte >> 4 }) as f32
}

/// `com.microsoft` `GatherBlockQuantized`: `Gather` along `gather_axis` (default 0) of the
/// `int4` / `uint4` `data` dequantised with one scale (and zero point, default 0, of the data's
/// type) per block of `block_size` (default 128, a power of two, at least 16) values along
/// `quantize_axis` (default 1); `scales` (and `zero_points`) have the data's shape with that
/// axis `ceil(size / block_size)`. Indices are `int32` / `int64`, on the host or the device,
/// negative ones wrapping.
pub(super) fn gather_block_quantized(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["block_size", "gather_axis", "quantize_axis"])?;
    let data = cx.h(ins, 0, "the quantised data")?;
    if !matches!(data.dtype, DType::I4 | DType::U4) {
        return Err(cx.err(format!("data is {}; GatherBlockQuantized reads int4 and uint4", data.dtype)));
    }
    let d = data.shape.clone();
    let ga = norm_axis(node, node.int("gather_axis", 0)?, d.len())?;
    let qa = norm_axis(node, node.int("quantize_axis", 1)?, d.len())?;
    let block = node.int("block_size", 128)?;
    if !(16..=MAX_DIM).contains(&block) || block & (block - 1) != 0 {
        return Err(cx.err(format!("attribute 'block_size' is {block}; it must be a power of two, at least 16")));
    }
    let block = block as usize;
    let mut sd = d.clone();
    sd[qa] = d[qa].div_ceil(block);
    let s = cx.h(ins, 2, "scales")?;
    if !s.dtype.is_float() || s.shape != sd {
        return Err(cx.err(format!("scales has type {} and shape {:?}; expected floats of shape {sd:?}", s.dtype, s.shape)));
    }
    let z = cx.opt_h(ins, 3, "zero_points")?;
    if let Some(z) = z {
        if z.dtype != data.dtype || z.shape != sd {
            return Err(
                cx.err(format!("zero_points has type {} and shape {:?}; expected {} of shape {sd:?}", z.dtype, z.shape, data.dtype))
            );
        }
    }
    let make = || -> Result<HostTensor> {
        let (q, sc) = (data.to_f32(), s.to_f32());
        let zp = z.map(|z| z.to_f32());
        // the block of element i: its index with axis qa divided by block_size
        let inner: usize = d[qa + 1..].iter().product();
        let (n_q, n_b) = (d[qa], sd[qa]);
        let w = (0..q.len())
            .map(|i| {
                let (outer, rest) = (i / (n_q * inner), i % (n_q * inner));
                let (k, j) = (rest / inner, rest % inner);
                let b = (outer * n_b + k / block) * inner + j;
                (q[i] - zp.as_ref().map_or(0.0, |z| z[b])) * sc[b]
            })
            .collect();
        Ok(HostTensor::f32(d.clone(), w))
    };
    cx.check_size(&d)?;
    let table = match cx.opt(ins, 0) {
        Some(V::Host { name: Some(n), .. }) if z.is_none() || matches!(cx.opt(ins, 3), Some(V::Host { name: Some(_), .. })) => {
            let (sn, zn) = (&node.inputs[2], node.inputs.get(3).map_or("", |z| z.as_str()));
            let key = format!("{n}\u{0}GatherBlockQuantized f32\u{0}{sn}\u{0}{zn}\u{0}{qa}/{block}");
            cx.consts.cached_derived(&key, &make)?
        }
        _ => upload(cx.dev(), &make()?, &format!("the dequantised data of node '{}'", node.name))?,
    };
    let idx = cx.v(ins, 1)?;
    if !matches!(idx.dtype(), DType::I32 | DType::I64) {
        return Err(cx.err(format!("indices are {}; expected int32 or int64", idx.dtype())));
    }
    Ok(vec![V::dev(gather_along(cx, &table, ga, idx)?, s.dtype)])
}
