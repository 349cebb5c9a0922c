//! [`Op::Attention`](pixelgrad_core::Op::Attention) (`Tensor::attention_fused`) and
//! `Tensor::attention`, which runs it where the backend does and composes it elsewhere
//! (WebGL): outputs against attention written here in f64 loops, against the composition
//! (`Tensor::attention_composed`) on the same device, and the gradients (the composition's,
//! recomputing the scores) against the f64 reference. Cases: no mask, padding and causal
//! masks (`-1e30`, the ONNX importer's exclusion), a learned bias with its gradient, grouped
//! key/value heads, `Hv != H`, one query row (a decoder's next token), more query rows than
//! one WebGPU workgroup or CPU block holds, and 1100 keys (several key tiles everywhere).
//! The options ([`AttentionOpts`]): causal exclusion at offsets 0, `T - S` and beyond (a
//! decoder's one row, a sliding window, a row whose window holds no key, several CPU blocks
//! over several key tiles so that whole tiles are skipped), the softcap before and after the
//! masks, the smooth softmax, alone and together, with grouped heads. WebGL refuses the fused
//! op, and WebGPU's kernel the options, with a typed error naming the op, which is checked.

use pixelgrad_core::{AttentionOpts, BackendKind, Device, Tensor};

use crate::harness::{check_all_with, compare, read_f64, seed_of, Case, Gen, Read};
use crate::tolerance::{accumulate, GRAD_FACTOR};

type Outcome = std::result::Result<(), String>;

/// What the key exclusion adds (as the ONNX importer's causal and padding masks).
const EXCLUDED: f64 = -1e30;

/// The additive mask of a case.
#[derive(Clone, Copy, Debug)]
enum Mask {
    None,
    /// `[B, 1, 1, T]`: batch `b` sees its first `T - 2b - 1` keys.
    Padding,
    /// `[1, 1, S, T]`: query `i` sees keys `j <= i + T - S`.
    Causal,
    /// `[1, N, S, T]` uniform values, differentiable.
    Bias,
}

/// One case: batch, query heads, key/value heads, query rows, keys, head size, value head size.
#[derive(Clone, Copy, Debug)]
struct Shape7 {
    b: usize,
    n: usize,
    nkv: usize,
    s: usize,
    t: usize,
    h: usize,
    hv: usize,
}

fn mask_of(d: Shape7, m: Mask) -> Option<(Vec<usize>, Vec<f64>)> {
    let Shape7 { b, n, s, t, .. } = d;
    match m {
        Mask::None => None,
        Mask::Padding => {
            let v = (0..b * t).map(|i| if i % t + 2 * (i / t) + 1 >= t { EXCLUDED } else { 0.0 }).collect();
            Some((vec![b, 1, 1, t], v))
        }
        Mask::Causal => {
            let v = (0..s * t).map(|i| if i % t > i / t + t - s { EXCLUDED } else { 0.0 }).collect();
            Some((vec![1, 1, s, t], v))
        }
        Mask::Bias => Some((vec![1, n, s, t], Gen::Uniform(-2.0, 2.0).values(seed_of(&format!("{d:?}/bias")), n * s * t))),
    }
}

/// `softmax(scale · q kᵀ + mask) v` per head in f64, with the options, from the docs of
/// `Op::Attention` and `AttentionOpts`.
fn expected(d: Shape7, o: &AttentionOpts, q: &[f64], k: &[f64], v: &[f64], mask: Option<&(Vec<usize>, Vec<f64>)>) -> Vec<f64> {
    let scale = f64::from(o.scale);
    let cap = |x: f64| match o.softcap {
        Some(c) => f64::from(c) * (x / f64::from(c)).tanh(),
        None => x,
    };
    let Shape7 { b, n, nkv, s, t, h, hv } = d;
    let mut out = vec![0.0; b * n * s * hv];
    for bi in 0..b {
        for ni in 0..n {
            let g = bi * nkv + ni / (n / nkv);
            for i in 0..s {
                let qr = &q[((bi * n + ni) * s + i) * h..][..h];
                let scores: Vec<f64> = (0..t)
                    .map(|j| {
                        let kr = &k[(g * t + j) * h..][..h];
                        let mut x = scale * qr.iter().zip(kr).map(|(a, c)| a * c).sum::<f64>();
                        if !o.softcap_after_masks {
                            x = cap(x);
                        }
                        if let Some((md, mv)) = mask {
                            let at = |a: usize, idx: usize| if md[a] == 1 { 0 } else { idx };
                            x += mv[((at(0, bi) * md[1] + at(1, ni)) * md[2] + at(2, i)) * md[3] + j];
                        }
                        if let Some(off) = o.causal {
                            let pos = i + off;
                            if j > pos || o.window.is_some_and(|w| j + w < pos) {
                                x += EXCLUDED;
                            }
                        }
                        if o.softcap_after_masks {
                            x = cap(x);
                        }
                        x
                    })
                    .collect();
                // the smooth softmax's extra zero logit
                let zero = if o.smooth { 0.0 } else { f64::NEG_INFINITY };
                let top = scores.iter().cloned().fold(zero, f64::max);
                let w: Vec<f64> = scores.iter().map(|x| (x - top).exp()).collect();
                let sum: f64 = w.iter().sum::<f64>() + (zero - top).exp();
                let o = &mut out[((bi * n + ni) * s + i) * hv..][..hv];
                for (j, wj) in w.iter().enumerate() {
                    for (c, oc) in o.iter_mut().enumerate() {
                        *oc += wj / sum * v[(g * t + j) * hv + c];
                    }
                }
            }
        }
    }
    out
}

pub async fn attention(dev: &Device, read: Read) -> Outcome {
    let kind = dev.backend().kind();
    let sh = |b, n, nkv, s, t, h, hv| Shape7 { b, n, nkv, s, t, h, hv };
    let plain = |h: usize| AttentionOpts::scaled(1.0 / (h as f32).sqrt());
    let opt = |h: usize, f: &dyn Fn(AttentionOpts) -> AttentionOpts| f(plain(h));
    let specs: Vec<(&str, Shape7, Mask, AttentionOpts)> = vec![
        ("plain", sh(1, 2, 2, 5, 7, 8, 8), Mask::None, plain(8)),
        ("grouped_hv5_padding", sh(2, 4, 2, 3, 6, 8, 5), Mask::Padding, plain(8)),
        ("causal", sh(1, 2, 1, 6, 6, 16, 16), Mask::Causal, plain(16)),
        ("decode_s1", sh(2, 4, 1, 1, 9, 8, 12), Mask::Padding, plain(8)),
        ("bias_s70", sh(1, 2, 2, 70, 33, 8, 4), Mask::Bias, plain(8)),
        ("long_t1100_causal", sh(1, 2, 1, 4, 1100, 16, 8), Mask::Causal, plain(16)),
        // the options
        ("opt_causal_0", sh(1, 4, 2, 6, 6, 8, 8), Mask::None, opt(8, &|o| o.causal(0))),
        ("opt_causal_past_padding", sh(2, 2, 1, 3, 8, 8, 5), Mask::Padding, opt(8, &|o| o.causal(5))),
        ("opt_causal_beyond", sh(1, 2, 2, 3, 4, 8, 8), Mask::Bias, opt(8, &|o| o.causal(6))),
        ("opt_decode_s1_causal", sh(2, 4, 1, 1, 9, 8, 12), Mask::None, opt(8, &|o| o.causal(8))),
        ("opt_window", sh(1, 2, 1, 7, 9, 8, 4), Mask::None, opt(8, &|o| AttentionOpts { window: Some(3), ..o.causal(2) })),
        ("opt_window_empty_row", sh(1, 2, 1, 4, 3, 8, 4), Mask::None, opt(8, &|o| AttentionOpts { window: Some(1), ..o.causal(2) })),
        ("opt_causal_tiles_s600", sh(1, 2, 1, 600, 600, 8, 4), Mask::None, opt(8, &|o| o.causal(0))),
        (
            "opt_window_tiles_t1100",
            sh(1, 1, 1, 130, 1100, 8, 4),
            Mask::Bias,
            opt(8, &|o| AttentionOpts { window: Some(300), ..o.causal(900) }),
        ),
        ("opt_softcap_before", sh(2, 4, 2, 3, 6, 8, 5), Mask::Padding, opt(8, &|o| AttentionOpts { softcap: Some(0.5), ..o })),
        (
            "opt_softcap_after_causal",
            sh(1, 2, 1, 5, 7, 8, 8),
            Mask::Bias,
            opt(8, &|o| AttentionOpts { softcap: Some(1.5), softcap_after_masks: true, ..o.causal(2) }),
        ),
        ("opt_smooth_grouped", sh(1, 4, 2, 5, 7, 8, 8), Mask::Padding, opt(8, &|o| AttentionOpts { smooth: true, ..o })),
        (
            "opt_smooth_empty_row",
            sh(1, 2, 1, 4, 3, 8, 4),
            Mask::None,
            opt(8, &|o| AttentionOpts { smooth: true, window: Some(1), ..o.causal(2) }),
        ),
        (
            "opt_all",
            sh(2, 4, 1, 4, 300, 8, 4),
            Mask::Bias,
            opt(8, &|o| AttentionOpts { softcap: Some(2.0), smooth: true, ..o.causal(296) }),
        ),
    ];
    let mut cases = Vec::new();
    for (name, d, m, opts) in specs {
        let tag = format!("attention/{name}");
        let err = |e: pixelgrad_core::Error| format!("{tag}: {e}");
        let qv = Gen::Uniform(-1.0, 1.0).values(seed_of(&format!("{tag}/q")), d.b * d.n * d.s * d.h);
        let kv = Gen::Uniform(-1.0, 1.0).values(seed_of(&format!("{tag}/k")), d.b * d.nkv * d.t * d.h);
        let vv = Gen::Uniform(-1.0, 1.0).values(seed_of(&format!("{tag}/v")), d.b * d.nkv * d.t * d.hv);
        let mask = mask_of(d, m);
        let want = expected(d, &opts, &qv, &kv, &vv, mask.as_ref());
        let q = Tensor::from_f64(dev, &qv, [d.b, d.n, d.s, d.h]).map_err(err)?;
        let k = Tensor::from_f64(dev, &kv, [d.b, d.nkv, d.t, d.h]).map_err(err)?;
        let v = Tensor::from_f64(dev, &vv, [d.b, d.nkv, d.t, d.hv]).map_err(err)?;
        let mt = match &mask {
            Some((md, mv)) => Some(Tensor::from_f64(dev, mv, md.clone()).map_err(err)?),
            None => None,
        };
        let tol = accumulate(d.t * d.h).scaled(2.0);
        let composed = q.attention_composed(&k, &v, mt.as_ref(), opts).map_err(err)?;
        let composed = read_f64(&composed, read).await.map_err(err)?;
        compare(&tag, "composition vs f64 loops", &composed, &want, tol)?;
        let chosen = q.attention(&k, &v, mt.as_ref(), opts).map_err(err)?;
        compare(&tag, "Tensor::attention vs f64 loops", &read_f64(&chosen, read).await.map_err(err)?, &want, tol)?;
        let fused = q.attention_fused(&k, &v, mt.as_ref(), opts);
        // WebGL has no fused op; WebGPU's kernel runs no options beyond the scale
        let fused_here = kind == BackendKind::Cpu || (kind == BackendKind::WebGpu && opts.is_plain());
        if !fused_here {
            match fused.and_then(|y| y.to_vec()) {
                Err(e) if e.to_string().contains("attention") => {}
                Err(e) => return Err(format!("{tag}: {kind:?}'s refusal does not name the op: {e}")),
                Ok(_) => return Err(format!("{tag}: {kind:?} ran the fused op with {opts:?}, which it is documented to refuse")),
            }
        } else {
            let fused = read_f64(&fused.map_err(err)?, read).await.map_err(err)?;
            compare(&tag, "fused vs f64 loops", &fused, &want, tol)?;
            compare(&tag, "fused vs composition", &fused, &composed, tol)?;
        }
        // Gradients against the f64 reference (which runs the fused op and its gradient):
        // the fused op where this backend runs it, and the composition everywhere.
        let dims = [vec![d.b, d.n, d.s, d.h], vec![d.b, d.nkv, d.t, d.h], vec![d.b, d.nkv, d.t, d.hv]];
        let grad_tol = accumulate(d.t * d.h * d.s).scaled(2.0 * GRAD_FACTOR);
        for (how, fused_case) in [("fused", true), ("composed", false)] {
            if fused_case && !fused_here {
                continue;
            }
            let mut c = Case::new("attention", format!("{name}_{how}"), move |_, x| {
                let mask = x.get(3);
                if fused_case {
                    x[0].attention_fused(&x[1], &x[2], mask, opts)
                } else {
                    x[0].attention_composed(&x[1], &x[2], mask, opts)
                }
            })
            .input(dims[0].clone(), Gen::Values(qv.clone()))
            .input(dims[1].clone(), Gen::Values(kv.clone()))
            .input(dims[2].clone(), Gen::Values(vv.clone()));
            if let Some((md, mv)) = &mask {
                c = match m {
                    Mask::Bias => c.input(md.clone(), Gen::Values(mv.clone())),
                    _ => c.constant(md.clone(), Gen::Values(mv.clone())),
                };
            }
            cases.push(c.tol(tol).grad_tol(grad_tol));
        }
    }
    check_all_with(dev, &cases, read).await
}
