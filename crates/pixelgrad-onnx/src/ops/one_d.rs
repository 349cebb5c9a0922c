//! 1-D convolutions and pooling as their 2-D forms.

use super::context::{Cx, Run, V};
use crate::Result;

/// A 1-D convolution or pooling (`[N, C, L]` input) as the 2-D one over `[N, C, 1, L]`: the
/// window attributes gain a leading unit axis, the input and rank-3 weights a unit height,
/// and the result loses it again. `run` is the 2-D operator.
pub(super) fn one_d_as_two_d(cx: &Cx, ins: &[Option<V>], run: Run) -> Result<Vec<V>> {
    use crate::graph::Attr;
    let mut node = cx.node.clone();
    for (name, lead) in [("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("output_padding", 0), ("output_shape", 1)] {
        if let Some(Attr::Ints(v)) = node.attrs.get(name) {
            if v.len() != 1 {
                return Err(cx.err(format!("{name} {v:?}: a 1-D window takes one value")));
            }
            let v = vec![lead, v[0]];
            node.attrs.insert(name.into(), Attr::Ints(v));
        }
    }
    if let Some(Attr::Ints(p)) = node.attrs.get("pads") {
        if p.len() != 2 {
            return Err(cx.err(format!("pads {p:?}: a 1-D window takes two values")));
        }
        let p = vec![0, p[0], 0, p[1]];
        node.attrs.insert("pads".into(), Attr::Ints(p));
    }
    let unit_height = |v: &V, i: usize| -> Result<Option<V>> {
        let t = cx.to_dev(v, i)?;
        let mut d = t.dims().to_vec();
        d.insert(2, 1);
        Ok(Some(V::dev(t.reshape(d)?, v.dtype())))
    };
    // the input and the weights (rank 3) gain the unit height; the bias stays
    let mut ins2 = ins.to_vec();
    for (i, slot) in ins2.iter_mut().enumerate().take(2) {
        if let Some(v) = cx.opt(ins, i).filter(|v| v.dims().len() == 3) {
            *slot = unit_height(v, i)?;
        }
    }
    let cx2 = Cx { consts: cx.consts, node: &node };
    let mut outs = run(&cx2, &ins2)?;
    // every result (MaxPool's indices too) loses the unit height again
    for out in outs.iter_mut() {
        if let V::Dev { t, dtype } = out {
            if t.rank() == 4 && t.dims().get(2) == Some(&1) {
                let mut d = t.dims().to_vec();
                d.remove(2);
                *out = V::dev(t.reshape(d)?, *dtype);
            }
        }
    }
    Ok(outs)
}
