//! Post-processing that stays on the device: top-k along the last axis and greedy
//! non-maximum suppression. Both are loops of reductions, gathers and elementwise masks with a
//! fixed number of rounds (`k`, `max_outputs`), so nothing is read back until the caller reads
//! the small result.
//!
//! Ordering: larger values first; equal values in index order (a stable sort); NaN and `-inf`
//! last (after every finite value, in index order).

use crate::{Error, Result, Tensor};

/// Stand-in for NaN and -inf in ordering keys (finite, so every backend compares it exactly).
const LOWEST: f32 = f32::MIN;

/// `x` with NaN and values below [`LOWEST`] (-inf) replaced by [`LOWEST`].
fn ordering_key(x: &Tensor) -> Result<Tensor> {
    let lowest = Tensor::scalar(x.device(), LOWEST)?;
    // x == x is false only for NaN
    Tensor::select(&x.eq(x)?, &x.max_scalar(LOWEST)?, &lowest)
}

/// `0, 1, .., n - 1` as a `[1, n]` row.
fn index_row(x: &Tensor, n: usize) -> Result<Tensor> {
    Tensor::arange(x.device(), n)?.reshape([1, n])
}

/// One round of selection over rows `key [B, N]` among entries with `alive [B, N]` = 1: the
/// index (`[B, 1]`, as f32) of the first alive entry with the largest key. Rows with no alive
/// entry give some index whose `alive` is 0.
fn first_max(key: &Tensor, alive: &Tensor) -> Result<Tensor> {
    let lowest = Tensor::scalar(key.device(), LOWEST)?;
    let masked = Tensor::select(alive, key, &lowest)?;
    let m = masked.max_axis(-1, true)?;
    let cand = masked.eq(&m)?.mul(alive)?;
    cand.argmax(-1, true)
}

/// The `k` largest values along the last axis and their indices (as f32), each `[.., k]`,
/// largest first (see the module docs for ties and NaN). `k` must be in `1..=n`.
pub fn topk(x: &Tensor, k: usize) -> Result<(Tensor, Tensor)> {
    let d = x.dims().to_vec();
    let n = d.last().copied().unwrap_or(0);
    if x.rank() == 0 || k == 0 || k > n {
        return Err(Error::Shape {
            op: "topk",
            shapes: vec![d],
            backend: x.device().name(),
            msg: format!("k = {k} must be between 1 and the last axis' size {n}"),
        });
    }
    let rows = x.numel() / n;
    let x2 = x.reshape([rows, n])?;
    let key = ordering_key(&x2)?;
    let ids = index_row(&x2, n)?;
    let mut taken = Tensor::zeros(x.device(), [rows, n])?;
    let (mut vals, mut idxs) = (Vec::with_capacity(k), Vec::with_capacity(k));
    for _ in 0..k {
        let i = first_max(&key, &taken.affine(-1.0, 1.0)?)?;
        vals.push(x2.gather(1, &i)?);
        taken = taken.maximum(&ids.eq(&i)?)?;
        idxs.push(i);
    }
    let mut out = d;
    *out.last_mut().unwrap_or(&mut 0) = k;
    let cat = |v: &[Tensor]| -> Result<Tensor> { Tensor::concat(&v.iter().collect::<Vec<_>>(), 1)?.reshape(out.clone()) };
    Ok((cat(&vals)?, cat(&idxs)?))
}

/// Options of [`non_max_suppression`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NmsOptions {
    /// Most boxes selected (the output's length).
    pub max_outputs: usize,
    /// A box is dropped when its intersection over union with a selected box exceeds this.
    pub iou_threshold: f32,
    /// Only boxes scoring above this are considered (`None`: all but NaN scores).
    pub score_threshold: Option<f32>,
}

/// Greedy non-maximum suppression: repeatedly selects the highest-scoring remaining box and
/// drops every remaining box whose IoU with it exceeds `iou_threshold`. `boxes [N, 4]` are
/// `(x1, y1, x2, y2)` corners in any order (each pair is sorted); a pair of boxes with no
/// area between them has IoU 0. Returns `[max_outputs]` box indices (as f32) in selection
/// order, `-1` after the last selected box.
pub fn non_max_suppression(boxes: &Tensor, scores: &Tensor, opts: NmsOptions) -> Result<Tensor> {
    let op = "non_max_suppression";
    let n = boxes.dims().first().copied().unwrap_or(0);
    let err =
        |msg: String| Error::Shape { op, shapes: vec![boxes.dims().to_vec(), scores.dims().to_vec()], backend: boxes.device().name(), msg };
    if boxes.rank() != 2 || boxes.dims()[1] != 4 || scores.dims() != [n] {
        return Err(err("expects boxes [N, 4] and scores [N]".into()));
    }
    if !(0.0..=1.0).contains(&opts.iou_threshold) {
        return Err(err(format!("iouThreshold {} must be in [0, 1]", opts.iou_threshold)));
    }
    if opts.score_threshold.is_some_and(|t| !t.is_finite()) {
        return Err(err("scoreThreshold must be a finite number (leave it out to consider every box)".into()));
    }
    let dev = boxes.device();
    if opts.max_outputs == 0 {
        return Err(err("maxOutputs must be at least 1".into()));
    }
    if n == 0 {
        return Tensor::full(dev, [opts.max_outputs], -1.0);
    }
    let col = |i: usize| -> Result<Tensor> { boxes.slice(1, i, i + 1)?.reshape([1, n]) };
    let (a, b, c, e) = (col(0)?, col(1)?, col(2)?, col(3)?);
    let (x1, x2, y1, y2) = (a.minimum(&c)?, a.maximum(&c)?, b.minimum(&e)?, b.maximum(&e)?);
    let area = x2.sub(&x1)?.mul(&y2.sub(&y1)?)?;
    let s = scores.reshape([1, n])?;
    let key = ordering_key(&s)?;
    let mut alive = match opts.score_threshold {
        Some(t) => s.gt_scalar(t)?,
        None => s.eq(&s)?,
    };
    let ids = index_row(&s, n)?;
    let zero = Tensor::scalar(dev, 0.0)?;
    let mut picked = Vec::with_capacity(opts.max_outputs);
    for _ in 0..opts.max_outputs {
        let i = first_max(&key, &alive)?;
        let valid = alive.gather(1, &i)?;
        // valid ? i : -1
        picked.push(valid.mul(&i.add_scalar(1.0)?)?.add_scalar(-1.0)?);
        let at = |t: &Tensor| t.gather(1, &i);
        let iw = x2.minimum(&at(&x2)?)?.sub(&x1.maximum(&at(&x1)?)?)?.max_scalar(0.0)?;
        let ih = y2.minimum(&at(&y2)?)?.sub(&y1.maximum(&at(&y1)?)?)?.max_scalar(0.0)?;
        let inter = iw.mul(&ih)?;
        let union = area.add(&at(&area)?)?.sub(&inter)?;
        let iou = Tensor::select(&union.gt(&zero)?, &inter.div(&union.max_scalar(f32::MIN_POSITIVE)?)?, &zero)?;
        let keep = iou.gt_scalar(opts.iou_threshold)?.affine(-1.0, 1.0)?.mul(&ids.eq(&i)?.affine(-1.0, 1.0)?)?;
        alive = alive.mul(&keep)?;
    }
    Tensor::concat(&picked.iter().collect::<Vec<_>>(), 1)?.reshape([opts.max_outputs])
}
