//! `Einsum` as sums, permutations and batched matrix products: operands are contracted two at a
//! time (left to right), each pair as one `[batch, rows, k] x [batch, k, cols]` product.
//! Ellipses broadcast; a letter repeated within one operand (a diagonal) is refused.

use pixelgrad_core::Tensor;

use super::context::{take, Cx, V};
use crate::Result;

/// One operand while the equation is evaluated: its tensor and one label per axis.
struct Term {
    t: Tensor,
    labels: Vec<char>,
}

pub fn run(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let node = cx.node;
    node.only_attrs(&["equation"])?;
    let eq: String = node.string("equation", "")?.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let specs: Vec<&str> = lhs.split(',').collect();
    let n_in = (0..ins.len()).filter(|&i| cx.opt(ins, i).is_some()).count();
    if specs.len() != n_in {
        return Err(cx.err(format!("equation '{eq}' names {} operands, the node has {n_in}", specs.len())));
    }
    let tensors: Vec<Tensor> = (0..n_in).map(|i| cx.t(ins, i)).collect::<Result<_>>()?;
    // ellipsis axes get labels of their own, aligned from the right across operands
    let mut ell = 0;
    let mut parsed = Vec::new();
    for (spec, t) in specs.iter().zip(&tensors) {
        let (named, has_ell) = labels_of(cx, spec)?;
        let e = if has_ell {
            t.rank()
                .checked_sub(named.iter().map(Vec::len).sum())
                .ok_or_else(|| cx.err(format!("operand '{spec}' has rank {}", t.rank())))?
        } else {
            0
        };
        ell = ell.max(e);
        parsed.push((named, has_ell, e));
    }
    let ell_label = |i: usize| char::from_u32(0xE000 + i as u32).unwrap_or('?');
    let mut terms = Vec::new();
    let mut written: Vec<char> = Vec::new();
    for ((named, has_ell, e), t) in parsed.into_iter().zip(tensors) {
        let mut labels = named[0].clone();
        if has_ell {
            labels.extend((ell - e..ell).map(ell_label));
        }
        labels.extend(named.get(1).cloned().unwrap_or_default());
        if labels.len() != t.rank() {
            return Err(cx.err(format!("equation '{eq}' gives {} labels for an operand of rank {}", labels.len(), t.rank())));
        }
        written.extend(labels.iter().copied());
        // A label repeated within one operand reads its diagonal: those axes become one.
        let mut t = t;
        while let Some((i, j)) = repeated(&labels) {
            let n = t.dims()[i];
            if t.dims()[j] != n {
                return Err(cx.err(format!("label '{}' names axes of sizes {n} and {} in one operand", labels[i], t.dims()[j])));
            }
            let rest: Vec<usize> = (0..t.rank()).filter(|&a| a != i && a != j).collect();
            let mut perm = rest.clone();
            perm.extend([i, j]);
            let mut dims: Vec<usize> = rest.iter().map(|&a| t.dims()[a]).collect();
            dims.push(n * n);
            let diag: Vec<usize> = (0..n).map(|k| k * (n + 1)).collect();
            t = take(&t.permute(&perm)?.reshape(dims)?, rest.len(), &diag)?;
            let c = labels[i];
            labels = rest.iter().map(|&a| labels[a]).collect();
            labels.push(c);
        }
        terms.push(Term { t, labels });
    }
    // the output's labels: given, or every label used once, ellipsis first, then alphabetical
    let out: Vec<char> = match &rhs {
        Some(r) => {
            let (named, has_ell) = labels_of(cx, r)?;
            let mut o = named[0].clone();
            if has_ell {
                o.extend((0..ell).map(ell_label));
            }
            o.extend(named.get(1).cloned().unwrap_or_default());
            o
        }
        None => {
            // labels written once in the equation (a diagonal's label is written twice)
            let all = &written;
            let mut once: Vec<char> =
                all.iter().copied().filter(|c| c.is_ascii_alphabetic() && all.iter().filter(|d| *d == c).count() == 1).collect();
            once.sort_unstable();
            (0..ell).map(ell_label).chain(once).collect()
        }
    };
    // each label's size, with broadcasting of size-1 axes
    let mut size = std::collections::HashMap::new();
    for term in &terms {
        for (&c, &n) in term.labels.iter().zip(term.t.dims()) {
            let s = size.entry(c).or_insert(n);
            if *s == 1 {
                *s = n;
            } else if n != 1 && n != *s {
                return Err(cx.err(format!("label '{c}' has sizes {s} and {n}")));
            }
        }
    }
    if let Some(c) = out.iter().find(|c| !size.contains_key(c)) {
        return Err(cx.err(format!("output label '{c}' is in no operand")));
    }
    let mut terms = terms.into_iter();
    let mut acc = terms.next().ok_or_else(|| cx.err("needs at least one operand"))?;
    let rest: Vec<Term> = terms.collect();
    for (i, b) in rest.iter().enumerate() {
        // labels still needed after this pair: the output's and the later operands'
        let keep: Vec<char> = out.iter().chain(rest[i + 1..].iter().flat_map(|t| &t.labels)).copied().collect();
        acc = contract(cx, &acc, b, &keep, &size)?;
    }
    let y = reduce_to(acc, &out)?;
    cx.check_size(&out.iter().map(|c| size[c]).collect::<Vec<_>>())?;
    let y = broadcast_labels(&y, &size)?;
    Ok(vec![V::dev(y.t, cx.dtype0(ins))])
}

/// The labels of one side of an equation: the letters before and after its ellipsis (the
/// second list only when there is one).
fn labels_of(cx: &Cx, spec: &str) -> Result<(Vec<Vec<char>>, bool)> {
    let parts: Vec<&str> = spec.split("...").collect();
    if parts.len() > 2 {
        return Err(cx.err(format!("'{spec}' has more than one ellipsis")));
    }
    let mut out = Vec::new();
    for p in &parts {
        if let Some(c) = p.chars().find(|c| !c.is_ascii_alphabetic()) {
            return Err(cx.err(format!("'{c}' in '{spec}' is not a letter")));
        }
        out.push(p.chars().collect());
    }
    Ok((out, parts.len() == 2))
}

/// `t` summed over the labels not in `keep`, then its axes ordered as `keep` where present.
fn reduce_to(t: Term, keep: &[char]) -> Result<Term> {
    let mut x = t.t;
    let mut labels = t.labels;
    for i in (0..labels.len()).rev() {
        if !keep.contains(&labels[i]) {
            x = x.sum_axis(i as isize, false)?;
            labels.remove(i);
        }
    }
    let order: Vec<char> = keep.iter().copied().filter(|c| labels.contains(c)).collect();
    let perm: Vec<usize> = order.iter().map(|c| labels.iter().position(|d| d == c).unwrap_or(0)).collect();
    let x = if perm.iter().enumerate().all(|(i, &p)| i == p) { x } else { x.permute(&perm)? };
    Ok(Term { t: x, labels: order })
}

/// `t` with every size-1 axis expanded to its label's size.
fn broadcast_labels(t: &Term, size: &std::collections::HashMap<char, usize>) -> Result<Term> {
    let full: Vec<usize> = t.labels.iter().map(|c| size[c]).collect();
    let t2 = if full == t.t.dims() { t.t.clone() } else { t.t.broadcast_to(full)? };
    Ok(Term { t: t2, labels: t.labels.clone() })
}

/// The product of `a` and `b` summed over their shared labels that `keep` does not need.
fn contract(cx: &Cx, a: &Term, b: &Term, keep: &[char], size: &std::collections::HashMap<char, usize>) -> Result<Term> {
    // labels only one side has and nothing later needs are summed away first
    let a_keep: Vec<char> = a.labels.iter().copied().filter(|c| keep.contains(c) || b.labels.contains(c)).collect();
    let b_keep: Vec<char> = b.labels.iter().copied().filter(|c| keep.contains(c) || a.labels.contains(c)).collect();
    let batch: Vec<char> = a_keep.iter().copied().filter(|c| b_keep.contains(c) && keep.contains(c)).collect();
    let inner: Vec<char> = a_keep.iter().copied().filter(|c| b_keep.contains(c) && !keep.contains(c)).collect();
    let rows: Vec<char> = a_keep.iter().copied().filter(|c| !b_keep.contains(c)).collect();
    let cols: Vec<char> = b_keep.iter().copied().filter(|c| !a_keep.contains(c)).collect();
    let order = |l: &[&[char]]| -> Vec<char> { l.iter().flat_map(|s| s.iter().copied()).collect() };
    let n = |l: &[char]| l.iter().fold(1usize, |acc, c| acc.saturating_mul(size[c]));
    let (nb, m, k, nc) = (n(&batch), n(&rows), n(&inner), n(&cols));
    // an outer product can be far larger than its operands
    for dims in [[nb, m, nc], [nb, m, k], [nb, k, nc]] {
        cx.check_size(&dims)?;
    }
    let pa = broadcast_labels(&reduce_to(Term { t: a.t.clone(), labels: a.labels.clone() }, &order(&[&batch, &rows, &inner]))?, size)?;
    let pb = broadcast_labels(&reduce_to(Term { t: b.t.clone(), labels: b.labels.clone() }, &order(&[&batch, &inner, &cols]))?, size)?;
    let y = pa.t.reshape([nb, m, k])?.matmul(&pb.t.reshape([nb, k, nc])?)?;
    let labels = order(&[&batch, &rows, &cols]);
    let dims: Vec<usize> = labels.iter().map(|c| size[c]).collect();
    Ok(Term { t: y.reshape(dims)?, labels })
}

/// The first pair of axes that share a label.
fn repeated(labels: &[char]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|j| labels[..j].iter().position(|c| *c == labels[j]).map(|i| (i, j)))
}
