//! The CPU's dialect of [`super::program`]: a program evaluated element by element, in `f32`
//! with the device's operations (what the GPU renderings compute) or in `f64` (the
//! reference), integers in `i64`.

use super::program::{Acc, Cond, Fx, FxOp, Ix, IxOp, Program, Stmt};
use crate::{Error, Result};

/// The float types a program evaluates in.
pub trait Scalar: Copy + PartialOrd + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> {
    fn of_f32(v: f32) -> Self;
    fn of_i64(v: i64) -> Self;
    fn as_f64(self) -> f64;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
}

impl Scalar for f32 {
    fn of_f32(v: f32) -> Self {
        v
    }
    fn of_i64(v: i64) -> Self {
        v as f32
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn ln(self) -> Self {
        f32::ln(self)
    }
}

impl Scalar for f64 {
    fn of_f32(v: f32) -> Self {
        v as f64
    }
    fn of_i64(v: i64) -> Self {
        v as f64
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
}

struct State<'a, T> {
    program: &'a Program,
    inputs: &'a [&'a [T]],
    params: &'a [i64],
    elem: i64,
    ints: [i64; 256],
    floats: [T; 256],
    /// Per accumulator: value and tie count.
    accs: Vec<(T, T)>,
}

fn bad(program: &Program, what: String) -> Error {
    Error::invalid(format!("program {}", program.name), what)
}

impl<T: Scalar> State<'_, T> {
    fn ix(&self, e: &Ix) -> Result<i64> {
        Ok(match e {
            Ix::Lit(v) => *v as i64,
            Ix::Param(i) => *self.params.get(*i as usize).ok_or_else(|| bad(self.program, format!("no parameter {i}")))?,
            Ix::Var(v) => self.ints[*v as usize],
            Ix::Elem => self.elem,
            Ix::Bin(op, a, b) => {
                let (a, b) = (self.ix(a)?, self.ix(b)?);
                match op {
                    IxOp::Add => a + b,
                    IxOp::Sub => a - b,
                    IxOp::Mul => a * b,
                    IxOp::Div => a.checked_div(b).ok_or_else(|| bad(self.program, "division by zero".into()))?,
                    IxOp::Min => a.min(b),
                    IxOp::Max => a.max(b),
                }
            }
            Ix::Of(f) => {
                let v = self.fx(f)?.as_f64();
                if !(v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15) {
                    return Err(bad(self.program, format!("{v} used as an integer")));
                }
                v as i64
            }
        })
    }

    fn cond(&self, c: &Cond) -> Result<bool> {
        Ok(match c {
            Cond::FEq(a, b) => self.fx(a)? == self.fx(b)?,
            Cond::Index { value, limit } => {
                let (v, l) = (self.fx(value)?.as_f64(), self.ix(limit)?);
                v >= 0.0 && v < l as f64 && v.floor() == v
            }
            Cond::Not(c) => !self.cond(c)?,
            Cond::IsNan(v) => self.fx(v)?.as_f64().is_nan(),
            Cond::Lt(a, b) => self.ix(a)? < self.ix(b)?,
            Cond::FGt(a, b) => self.fx(a)? > self.fx(b)?,
            Cond::And(a, b) => self.cond(a)? && self.cond(b)?,
        })
    }

    /// Element `i` of input `input`; outside it, an error.
    fn load(&self, input: u8, i: i64) -> Result<T> {
        let data = self.inputs.get(input as usize).ok_or_else(|| bad(self.program, format!("no input {input}")))?;
        usize::try_from(i)
            .ok()
            .and_then(|i| data.get(i))
            .copied()
            .ok_or_else(|| bad(self.program, format!("load of element {i} of input {input} ({} elements)", data.len())))
    }

    fn fx(&self, e: &Fx) -> Result<T> {
        Ok(match e {
            Fx::Lit(bits) => T::of_f32(f32::from_bits(*bits)),
            Fx::Load { input, at } | Fx::Index { input, at } => self.load(*input, self.ix(at)?)?,
            Fx::Var(v) => self.floats[*v as usize],
            Fx::Acc(a) if self.program.accs.get(*a as usize) == Some(&Acc::LogSumExp) => {
                let (m, s) = self.accs[*a as usize];
                let one = T::of_f32(1.0);
                m + if s > one { s } else { one }.ln()
            }
            Fx::Acc(a) => self.accs[*a as usize].0,
            Fx::Ties(a) => {
                let t = self.accs[*a as usize].1;
                let one = T::of_f32(1.0);
                if t > one {
                    t
                } else {
                    one
                }
            }
            Fx::Int(i) => T::of_i64(self.ix(i)?),
            Fx::Bin(op, a, b) => {
                let (a, b) = (self.fx(a)?, self.fx(b)?);
                match op {
                    FxOp::Add => a + b,
                    FxOp::Mul => a * b,
                    FxOp::Div => a / b,
                }
            }
        })
    }

    fn run(&mut self, body: &[Stmt]) -> Result<()> {
        for s in body {
            match s {
                Stmt::Let(v, e) => self.ints[*v as usize] = self.ix(e)?,
                Stmt::LetF(v, e) => self.floats[*v as usize] = self.fx(e)?,
                // Four loads; the alignment a texel read needs is checked, so a program that
                // would read across texels on WebGL fails here first.
                Stmt::Load4 { first, input, at } => {
                    let at = self.ix(at)?;
                    if at % 4 != 0 {
                        return Err(bad(self.program, format!("4-lane load at element {at} of input {input} (not a multiple of 4)")));
                    }
                    // The first lane must be inside the input; lanes past its end are the
                    // padding of its last texel on WebGL: garbage, NaN here (a program masks
                    // them, `Stmt::FoldLane`).
                    self.load(*input, at)?;
                    for l in 0..4 {
                        let v = self.load(*input, at + l).unwrap_or(T::of_f32(f32::NAN));
                        let slot = self
                            .floats
                            .get_mut(*first as usize + l as usize)
                            .ok_or_else(|| bad(self.program, format!("4-lane load into variable {first}")))?;
                        *slot = v;
                    }
                }
                Stmt::For { var, lo, hi, body, .. } => {
                    let (lo, hi) = (self.ix(lo)?, self.ix(hi)?);
                    for i in lo..hi {
                        self.ints[*var as usize] = i;
                        self.run(body)?;
                    }
                }
                Stmt::Reset(a) => self.accs[*a as usize] = (T::of_f32(0.0), T::of_f32(0.0)),
                Stmt::FoldLane { acc, value, keep } => {
                    let v = self.fx(value)?;
                    if keep.as_ref().map_or(Ok(true), |c| self.cond(c))? {
                        self.fold(*acc, v)?;
                    }
                }
                Stmt::Fold { acc, value } => {
                    let v = self.fx(value)?;
                    self.fold(*acc, v)?;
                }
                Stmt::If { cond, body } => {
                    if self.cond(cond)? {
                        self.run(body)?;
                    }
                }
                // The CPU vets data before it runs a program: reaching a fault is its error.
                Stmt::Fault(code) => return Err(bad(self.program, format!("fault {code} (invalid data)"))),
            }
        }
        Ok(())
    }

    /// Folds `v` into accumulator `acc` by its kind's rule.
    fn fold(&mut self, acc: u8, v: T) -> Result<()> {
        let kind = self.program.accs.get(acc as usize).ok_or_else(|| bad(self.program, format!("no accumulator {acc}")))?;
        let (zero, one) = (T::of_f32(0.0), T::of_f32(1.0));
        let (m, ties) = &mut self.accs[acc as usize];
        match kind {
            Acc::Sum => *m = *m + v,
            Acc::Last => *m = v,
            Acc::First => {
                if *ties == zero {
                    *m = v;
                    *ties = one;
                }
            }
            // As program_render writes it.
            Acc::LogSumExp => {
                let (big, low) = (T::of_f32(3.4e38), T::of_f32(-3.4e38));
                #[allow(clippy::eq_op)]
                let nan = |x: T| x != x;
                if nan(*m) {
                } else if nan(v) {
                    *m = v;
                } else if *ties == zero {
                    *m = v;
                    if v > low {
                        *ties = one;
                    }
                } else if v > *m {
                    *ties = *ties * (*m + T::of_f32(-1.0) * v).exp() + one;
                    *m = v;
                } else if v > low && *m < big {
                    *ties = *ties + (v + T::of_f32(-1.0) * *m).exp();
                }
            }
            Acc::MaxTies => {
                if *ties == zero || v > *m {
                    *m = v;
                    *ties = one;
                } else if v == *m {
                    *ties = *ties + one;
                }
            }
        }
        Ok(())
    }
}

/// Every element `0..n` of `program`'s output, for `inputs` (flat) and integer `params` (in
/// [`Program::params`] order). A load outside its input is an error, not a panic.
pub fn eval<T: Scalar>(program: &Program, inputs: &[&[T]], params: &[i64], n: usize) -> Result<Vec<T>> {
    if params.len() != program.params.len() || inputs.len() != program.inputs.len() {
        return Err(bad(
            program,
            format!(
                "{} inputs and {} parameters given, {} and {} expected",
                inputs.len(),
                params.len(),
                program.inputs.len(),
                program.params.len()
            ),
        ));
    }
    let zero = T::of_f32(0.0);
    let mut st =
        State { program, inputs, params, elem: 0, ints: [0; 256], floats: [zero; 256], accs: vec![(zero, zero); program.accs.len()] };
    (0..n)
        .map(|e| {
            st.elem = e as i64;
            st.accs.iter_mut().for_each(|a| *a = (zero, zero));
            st.run(&program.body)?;
            st.fx(&program.out)
        })
        .collect()
}
