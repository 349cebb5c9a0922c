//! Recurrent layers: `LSTM`, `GRU` and `RNN`, unrolled over the sequence. The input
//! projection of every time step is one matrix product before the loop; each step adds the
//! recurrent product and runs the gates as elementwise ops (which the backends fuse). Both
//! directions, `sequence_lens` (steps past a sequence's length keep its state and output
//! zeros), initial states, peepholes, `clip`, `input_forget`, `linear_before_reset`, `layout`
//! and the activation functions of the specification are supported.

use pixelgrad_core::Tensor;

use super::context::{Cx, V};
use crate::Result;

#[derive(Clone, Copy, PartialEq)]
enum Cell {
    Lstm,
    Gru,
    Rnn,
}

impl Cell {
    /// Gates per hidden unit (rows of `W` per hidden unit).
    fn gates(self) -> usize {
        match self {
            Cell::Lstm => 4,
            Cell::Gru => 3,
            Cell::Rnn => 1,
        }
    }
    /// The default activations of one direction.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Rnn => &["Tanh"],
        }
    }
}

/// One activation function with its parameters.
#[derive(Clone)]
struct Act {
    name: String,
    alpha: f32,
    beta: f32,
}

impl Act {
    fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let (a, b) = (self.alpha, self.beta);
        Ok(match self.name.to_ascii_lowercase().as_str() {
            "sigmoid" => x.sigmoid()?,
            "tanh" => x.tanh()?,
            "relu" => x.relu()?,
            "leakyrelu" => x.leaky_relu(a)?,
            "thresholdedrelu" => Tensor::select(&x.gt_scalar(a)?, x, &Tensor::scalar(x.device(), 0.0)?)?,
            "hardsigmoid" => x.affine(a, b)?.max_scalar(0.0)?.min_scalar(1.0)?,
            "affine" => x.affine(a, b)?,
            "scaledtanh" => x.mul_scalar(b)?.tanh()?.mul_scalar(a)?,
            "elu" => x.relu()?.add(&x.min_scalar(0.0)?.exp()?.affine(a, -a)?)?,
            "softsign" => x.div(&x.abs()?.add_scalar(1.0)?)?,
            // log(1 + e^x) = relu(x) + log(1 + e^-|x|)
            _ => x.relu()?.add(&x.abs()?.neg()?.exp()?.add_scalar(1.0)?.log()?)?,
        })
    }
}

/// The activations of every direction, with `activation_alpha` / `activation_beta` consumed in
/// order by the functions that take them (the specification's defaults otherwise).
fn activations(cx: &Cx, cell: Cell, dirs: usize) -> Result<Vec<Act>> {
    let node = cx.node;
    let names: Vec<String> = match node.attrs.get("activations") {
        Some(crate::graph::Attr::Strings(v)) => v.clone(),
        Some(_) => return Err(cx.err("activations must be a list of strings")),
        None => cell.default_activations().iter().cycle().take(cell.default_activations().len() * dirs).map(|s| s.to_string()).collect(),
    };
    if names.len() != cell.default_activations().len() * dirs {
        return Err(cx.err(format!("{} activations given; {} per direction are needed", names.len(), cell.default_activations().len())));
    }
    let alphas = node.floats("activation_alpha")?.unwrap_or_default();
    let betas = node.floats("activation_beta")?.unwrap_or_default();
    let (mut ai, mut bi) = (alphas.iter(), betas.iter());
    let mut out = Vec::new();
    for name in names {
        let (da, db, takes_a, takes_b) = match name.to_ascii_lowercase().as_str() {
            "sigmoid" | "tanh" | "relu" | "softsign" | "softplus" => (0.0, 0.0, false, false),
            "leakyrelu" => (0.01, 0.0, true, false),
            "thresholdedrelu" | "elu" => (1.0, 0.0, true, false),
            "hardsigmoid" => (0.2, 0.5, true, true),
            "affine" => (1.0, 0.0, true, true),
            "scaledtanh" => (1.0, 1.0, true, true),
            other => return Err(cx.err(format!("activation '{other}' is not supported"))),
        };
        let alpha = if takes_a { ai.next().copied().unwrap_or(da) } else { da };
        let beta = if takes_b { bi.next().copied().unwrap_or(db) } else { db };
        out.push(Act { name, alpha, beta });
    }
    Ok(out)
}

/// One recurrent node's attributes and inputs, checked against each other.
struct Layer {
    cell: Cell,
    dirs: usize,
    reverse_only: bool,
    layout: i64,
    /// `X` as `[seq, batch, input]`.
    x: Tensor,
    w: Tensor,
    r: Tensor,
    b: Option<Tensor>,
    /// `sequence_lens` as a `[batch, 1]` device mask source, where some sequence is shorter.
    lens: Option<Tensor>,
    h0: Option<Tensor>,
    c0: Option<Tensor>,
    p: Option<Tensor>,
    acts: Vec<Act>,
    clip: Option<f32>,
    input_forget: bool,
    lbr: bool,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
}

/// `LSTM`, `GRU`, `RNN`.
pub(super) fn run(cx: &Cx, ins: &[Option<V>]) -> Result<Vec<V>> {
    let cell = match cx.node.op_type.as_str() {
        "LSTM" => Cell::Lstm,
        "GRU" => Cell::Gru,
        "RNN" => Cell::Rnn,
        _ => return Err(cx.unsupported()),
    };
    let l = layer(cx, ins, cell)?;
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    for d in 0..l.dirs {
        let (y, h, c) = direction(cx, &l, d)?;
        ys.push(y);
        hs.push(h);
        cs.push(c);
    }
    let cat = |v: &[Tensor], axis: usize| -> Result<Tensor> { Ok(Tensor::concat(&v.iter().collect::<Vec<_>>(), axis)?) };
    let (mut y, mut yh, mut yc) = (cat(&ys, 1)?, cat(&hs, 0)?, cat(&cs, 0)?);
    if l.layout == 1 {
        // Y [batch, seq, dirs, hidden]; Y_h, Y_c [batch, dirs, hidden]
        y = y.permute(&[2, 0, 1, 3])?;
        yh = yh.permute(&[1, 0, 2])?;
        yc = yc.permute(&[1, 0, 2])?;
    }
    let dt = cx.dtype0(ins);
    let mut outs = vec![V::dev(y, dt), V::dev(yh, dt)];
    if cell == Cell::Lstm {
        outs.push(V::dev(yc, dt));
    }
    Ok(outs)
}

/// Reads and checks the node's attributes and inputs.
fn layer(cx: &Cx, ins: &[Option<V>], cell: Cell) -> Result<Layer> {
    let node = cx.node;
    node.only_attrs(&[
        "activation_alpha",
        "activation_beta",
        "activations",
        "clip",
        "direction",
        "hidden_size",
        "input_forget",
        "layout",
        "linear_before_reset",
    ])?;
    let dirs = match node.string("direction", "forward")?.as_str() {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        other => return Err(cx.err(format!("direction '{other}' is not supported (forward, reverse, bidirectional)"))),
    };
    let reverse_only = node.string("direction", "forward")? == "reverse";
    let layout = node.int("layout", 0)?;
    let mut x = cx.t(ins, 0)?;
    if x.rank() != 3 {
        return Err(cx.err(format!("X must be rank 3, got {:?}", x.dims())));
    }
    if layout == 1 {
        x = x.permute(&[1, 0, 2])?;
    }
    let [seq, batch, input] = [x.dims()[0], x.dims()[1], x.dims()[2]];
    let (w, r) = (cx.t(ins, 1)?, cx.t(ins, 2)?);
    let g = cell.gates();
    let hidden = match node.int("hidden_size", 0)? {
        h if h > 0 => usize::try_from(h).unwrap_or(usize::MAX),
        _ => r.dims().last().copied().unwrap_or(0),
    };
    // hidden_size comes from the file: the gates' rows must not overflow
    let rows = g.checked_mul(hidden).ok_or_else(|| cx.err(format!("hidden_size {hidden} is too large")))?;
    if w.dims() != [dirs, rows, input] || r.dims() != [dirs, rows, hidden] {
        return Err(cx.err(format!(
            "W {:?} and R {:?} do not fit {dirs} direction(s), {g} gates of hidden size {hidden} and input size {input}",
            w.dims(),
            r.dims()
        )));
    }
    let acts = activations(cx, cell, dirs)?;
    let clip = node.attrs.contains_key("clip").then(|| node.float("clip", 0.0)).transpose()?;
    let input_forget = node.int("input_forget", 0)? != 0;
    let lbr = node.int("linear_before_reset", 0)? != 0;
    let opt = |i: usize| -> Result<Option<Tensor>> { cx.opt(ins, i).map(|_| cx.t(ins, i)).transpose() };
    let b = opt(3)?;
    if let Some(b) = &b {
        if b.dims() != [dirs, 2 * g * hidden] {
            return Err(cx.err(format!("B {:?} must be [{dirs}, {}]", b.dims(), 2 * g * hidden)));
        }
    }
    // sequence_lens: a host vector, or a device one (read as a mask per step)
    let lens: Option<Tensor> = match cx.opt(ins, 4) {
        None => None,
        Some(v) => match v.as_host() {
            Some(h) if h.to_f64().iter().all(|&l| l as usize == seq) => None,
            _ => Some(cx.to_dev(v, 4)?.reshape([batch, 1])?),
        },
    };
    let state = |i: usize, what: &str| -> Result<Option<Tensor>> {
        let Some(t) = opt(i)? else { return Ok(None) };
        let t = if layout == 1 { t.permute(&[1, 0, 2])? } else { t };
        if t.dims() != [dirs, batch, hidden] {
            return Err(cx.err(format!("{what} {:?} must be [{dirs}, {batch}, {hidden}] (num_directions, batch, hidden)", t.dims())));
        }
        Ok(Some(t))
    };
    let h0 = state(5, "initial_h")?;
    let c0 = if cell == Cell::Lstm { state(6, "initial_c")? } else { None };
    let p = if cell == Cell::Lstm { opt(7)? } else { None };
    if let Some(p) = &p {
        if p.dims() != [dirs, 3 * hidden] {
            return Err(cx.err(format!("P {:?} must be [{dirs}, {}]", p.dims(), 3 * hidden)));
        }
    }
    Ok(Layer { cell, dirs, reverse_only, layout, x, w, r, b, lens, h0, c0, p, acts, clip, input_forget, lbr, seq, batch, input, hidden })
}

/// Direction `d` unrolled over the sequence: its `Y` `[seq, 1, batch, hidden]` and final
/// `Y_h`, `Y_c` `[1, batch, hidden]`.
fn direction(cx: &Cx, l: &Layer, d: usize) -> Result<(Tensor, Tensor, Tensor)> {
    let Layer {
        cell,
        dirs: _,
        reverse_only,
        layout: _,
        x,
        w,
        r,
        b,
        lens,
        h0,
        c0,
        p,
        acts,
        clip,
        input_forget,
        lbr,
        seq,
        batch,
        input,
        hidden,
    } = l;
    let (cell, reverse_only, clip, input_forget, lbr, seq, batch, input, hidden) =
        (*cell, *reverse_only, *clip, *input_forget, *lbr, *seq, *batch, *input, *hidden);
    let g = cell.gates();
    let dev = cx.dev();
    let zeros = Tensor::zeros(dev, [batch, hidden])?;
    let reverse = reverse_only || d == 1;
    let pick = |t: &Tensor| -> Result<Tensor> { Ok(t.slice(0, d, d + 1)?.reshape(t.dims()[1..].to_vec())?) };
    let (wd, rd) = (pick(w)?, pick(r)?);
    // every step's input projection at once: [seq * batch, G * hidden]
    let mut xw = x.reshape([seq * batch, input])?.matmul_t(&wd, false, true)?;
    let mut rb = None;
    if let Some(b) = &b {
        let bd = pick(b)?;
        let (wbd, rbd) =
            (bd.slice(0, 0, g * hidden)?.reshape([1, g * hidden])?, bd.slice(0, g * hidden, 2 * g * hidden)?.reshape([1, g * hidden])?);
        if cell == Cell::Gru && lbr {
            // the recurrent bias of the candidate gate goes inside the reset product
            xw = xw.add(&wbd)?.add(&rbd.slice(1, 0, 2 * hidden)?.pad(&[0, 0], &[0, hidden])?)?;
            rb = Some(rbd.slice(1, 2 * hidden, 3 * hidden)?);
        } else {
            xw = xw.add(&wbd.add(&rbd)?)?;
        }
    }
    let xw = xw.reshape([seq, batch, g * hidden])?;
    let a = &acts[d * cell.default_activations().len()..(d + 1) * cell.default_activations().len()];
    let mut h = match &h0 {
        Some(t) => pick(t)?,
        None => zeros.clone(),
    };
    let mut c = match &c0 {
        Some(t) => pick(t)?,
        None => zeros.clone(),
    };
    let peep = match &p {
        Some(p) => {
            let pd = pick(p)?;
            let part = |k: usize| -> Result<Tensor> { Ok(pd.slice(0, k * hidden, (k + 1) * hidden)?.reshape([1, hidden])?) };
            Some([part(0)?, part(1)?, part(2)?])
        }
        None => None,
    };
    let mut out = vec![None; seq];
    let steps: Vec<usize> = if reverse { (0..seq).rev().collect() } else { (0..seq).collect() };
    for t in steps {
        let xt = xw.slice(0, t, t + 1)?.reshape([batch, g * hidden])?;
        let gate = |all: &Tensor, k: usize| -> Result<Tensor> { Ok(all.slice(1, k * hidden, (k + 1) * hidden)?) };
        let clipped = |v: Tensor| -> Result<Tensor> {
            Ok(match clip {
                Some(cl) => v.max_scalar(-cl)?.min_scalar(cl)?,
                None => v,
            })
        };
        let (h_new, c_new) = match cell {
            Cell::Lstm => {
                let all = xt.add(&h.matmul_t(&rd, false, true)?)?;
                // gate order i, o, f, c; peepholes i, o, f
                let peek = |k: usize, state: &Tensor, v: Tensor| -> Result<Tensor> {
                    Ok(match &peep {
                        Some(pp) => v.add(&pp[k].mul(state)?)?,
                        None => v,
                    })
                };
                let i = a[0].apply(&clipped(peek(0, &c, gate(&all, 0)?)?)?)?;
                let f = if input_forget { i.affine(-1.0, 1.0)? } else { a[0].apply(&clipped(peek(2, &c, gate(&all, 2)?)?)?)? };
                let cand = a[1].apply(&clipped(gate(&all, 3)?)?)?;
                let c_new = f.mul(&c)?.add(&i.mul(&cand)?)?;
                let o = a[0].apply(&clipped(peek(1, &c_new, gate(&all, 1)?)?)?)?;
                (o.mul(&a[2].apply(&c_new)?)?, Some(c_new))
            }
            Cell::Gru => {
                let rh = h.matmul_t(&rd, false, true)?;
                let z = a[0].apply(&clipped(gate(&xt, 0)?.add(&gate(&rh, 0)?)?)?)?;
                let rr = a[0].apply(&clipped(gate(&xt, 1)?.add(&gate(&rh, 1)?)?)?)?;
                let cand_in = if lbr {
                    let lin = match &rb {
                        Some(rbh) => gate(&rh, 2)?.add(rbh)?,
                        None => gate(&rh, 2)?,
                    };
                    gate(&xt, 2)?.add(&rr.mul(&lin)?)?
                } else {
                    let rh_w = rd.slice(0, 2 * hidden, 3 * hidden)?;
                    gate(&xt, 2)?.add(&rr.mul(&h)?.matmul_t(&rh_w, false, true)?)?
                };
                let cand = a[1].apply(&clipped(cand_in)?)?;
                // (1 - z) * cand + z * h
                (cand.add(&z.mul(&h.sub(&cand)?)?)?, None)
            }
            Cell::Rnn => (a[0].apply(&clipped(xt.add(&h.matmul_t(&rd, false, true)?)?)?)?, None),
        };
        match &lens {
            Some(l) => {
                // steps past a sequence's end keep its state and output zeros
                let live = l.gt_scalar(t as f32)?;
                out[t] = Some(Tensor::select(&live, &h_new, &zeros)?);
                h = Tensor::select(&live, &h_new, &h)?;
                if let Some(cn) = c_new {
                    c = Tensor::select(&live, &cn, &c)?;
                }
            }
            None => {
                out[t] = Some(h_new.clone());
                h = h_new;
                if let Some(cn) = c_new {
                    c = cn;
                }
            }
        }
    }
    let steps: Vec<Tensor> = out.into_iter().map(|o| o.ok_or_else(|| cx.err("a time step was not computed"))).collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = steps.iter().collect();
    Ok((Tensor::concat(&refs, 0)?.reshape([seq, 1, batch, hidden])?, h.reshape([1, batch, hidden])?, c.reshape([1, batch, hidden])?))
}
