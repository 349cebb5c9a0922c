//! Rendering [`super::program`]s as shader code. The statements, loops and accumulator rules
//! are written here once; a [`Spelling`] (one per shading language, kept with its backend)
//! says how the language writes types, literals, loads, parameters and loop headers.

use super::program::{Acc, Bound, Cond, Fx, FxOp, Ix, IxOp, Program, Stmt};

/// How one shading language spells a program.
pub trait Spelling {
    /// The integer type of indices (`float` where the language has no usable ints).
    fn int_ty(&self) -> &'static str;
    fn int_lit(&self, v: i32) -> String;
    fn float_lit(&self, v: f32) -> String {
        let s = format!("{v:?}");
        if v.is_sign_negative() {
            format!("({s})")
        } else {
            s
        }
    }
    /// Integer parameter `i` named `name`.
    fn param(&self, i: usize, name: &str) -> String;
    /// Element `at` of input `i` named `name`.
    fn load(&self, i: usize, name: &str, at: &str) -> String;
    /// Element `at` of input `i` named `name`, exactly as stored ([`Fx::Index`]).
    fn load_index(&self, i: usize, name: &str, at: &str) -> String {
        self.load(i, name, at)
    }
    /// Statements declaring the immutable float variables `names` as elements `at .. at + 4`
    /// of input `i` named `name` ([`Stmt::Load4`]; `at` is an integer variable holding a
    /// multiple of 4). By default four [`Spelling::load`]s; a language storing four elements
    /// per texel reads the one texel.
    fn load4(&self, i: usize, name: &str, at: &str, names: [&str; 4]) -> Vec<String> {
        (0..4)
            .map(|l| {
                let at = if l == 0 { at.to_string() } else { format!("({at} + {})", self.int_lit(l as i32)) };
                self.let_(true, names[l], &self.load(i, name, &at))
            })
            .collect()
    }
    /// Whether float `a` is a NaN, as a boolean expression the compiler cannot fold away
    /// (a bit test, or arithmetic on a uniform zero where the language has no bit access).
    fn is_nan(&self, a: &str) -> String;
    /// Integer `a` as a float.
    fn to_float(&self, a: &str) -> String;
    /// Float `a`, a whole number, as an integer.
    fn to_int(&self, a: &str) -> String;
    /// The statement raising fault `code` ([`Stmt::Fault`]); a comment where the backend
    /// checks the data in a pass of its own.
    fn fault(&self, code: u8) -> String;
    /// Integer division truncating towards zero.
    fn div(&self, a: &str, b: &str) -> String {
        format!("({a} / {b})")
    }
    /// A statement declaring a new immutable integer (`float`: a float) variable.
    fn let_(&self, float: bool, name: &str, value: &str) -> String;
    /// A statement declaring a new immutable float variable holding an index ([`Fx::Index`]),
    /// which must keep its value exactly.
    fn let_index(&self, name: &str, value: &str) -> String {
        self.let_(true, name, value)
    }
    /// A statement declaring a mutable float variable.
    fn var(&self, name: &str, value: &str) -> String;
    /// A statement declaring a new immutable boolean variable.
    fn let_bool(&self, name: &str, value: &str) -> String {
        format!("bool {name} = {value};")
    }
    /// The conjunction of boolean `terms`. By default the short-circuit `&&`; a language
    /// whose compilers turn that into branches may spell it without short circuit (every
    /// term the renderer writes is free of side effects and of faults).
    fn and(&self, terms: &[String]) -> String {
        format!("({})", terms.join(" && "))
    }
    /// The disjunction of boolean `terms`, as [`Spelling::and`] (by default `||`).
    fn or(&self, terms: &[String]) -> String {
        format!("({})", terms.join(" || "))
    }
    /// `a` where boolean `c` holds, else `b` (both evaluated: no branch).
    fn select(&self, c: &str, a: &str, b: &str) -> String {
        format!("({c} ? {a} : {b})")
    }
    /// The header of `for name in lo..hi { ` (`lo`, `hi` are variables), with the constant
    /// bound `bound` where the language needs one; closed by `}`.
    fn for_open(&self, name: &str, lo: &str, hi: &str, bound: Bound) -> String;
    /// Declarations the function needs (inputs, parameters), before it.
    fn declarations(&self, p: &Program) -> String;
    /// The function `compute` of the element index `i`, returning the `f32` in `body`'s
    /// last line's `result`.
    fn function(&self, body: &str, result: &str) -> String;
}

/// A rendered program: declarations, then `compute`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub declarations: String,
    pub function: String,
}

struct R<'a> {
    p: &'a Program,
    s: &'a dyn Spelling,
    out: String,
    depth: usize,
    temps: usize,
}

impl R<'_> {
    fn line(&mut self, l: &str) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(l);
        self.out.push('\n');
    }

    fn ix(&self, e: &Ix) -> String {
        match e {
            Ix::Lit(v) => self.s.int_lit(*v),
            Ix::Param(i) => self.s.param(*i as usize, self.p.params[*i as usize]),
            Ix::Var(v) => format!("v{v}"),
            Ix::Elem => "i".into(),
            Ix::Bin(op, a, b) => {
                let (a, b) = (self.ix(a), self.ix(b));
                match op {
                    IxOp::Add => format!("({a} + {b})"),
                    IxOp::Sub => format!("({a} - {b})"),
                    IxOp::Mul => format!("({a} * {b})"),
                    IxOp::Div => self.s.div(&a, &b),
                    IxOp::Min => format!("min({a}, {b})"),
                    IxOp::Max => format!("max({a}, {b})"),
                }
            }
            Ix::Of(f) => self.s.to_int(&self.fx(f)),
        }
    }

    fn cond(&self, c: &Cond) -> String {
        match c {
            Cond::FEq(a, b) => format!("({} == {})", self.fx(a), self.fx(b)),
            // NaN fails every comparison, so it is no index.
            Cond::Index { value, limit } => {
                let v = self.fx(value);
                let l = self.s.to_float(&self.ix(limit));
                self.s.and(&[format!("{v} >= 0.0"), format!("{v} < {l}"), format!("{v} == floor({v})")])
            }
            Cond::Not(c) => format!("!{}", self.cond(c)),
            Cond::IsNan(v) => format!("({})", self.s.is_nan(&self.fx(v))),
            Cond::Lt(a, b) => format!("({} < {})", self.ix(a), self.ix(b)),
            Cond::FGt(a, b) => format!("({} > {})", self.fx(a), self.fx(b)),
            Cond::And(a, b) => self.s.and(&[self.cond(a), self.cond(b)]),
        }
    }

    fn fx(&self, e: &Fx) -> String {
        match e {
            Fx::Lit(bits) => self.s.float_lit(f32::from_bits(*bits)),
            Fx::Load { input, at } => self.s.load(*input as usize, self.p.inputs[*input as usize], &self.ix(at)),
            Fx::Index { input, at } => self.s.load_index(*input as usize, self.p.inputs[*input as usize], &self.ix(at)),
            Fx::Var(v) => format!("v{v}"),
            // A log-sum-exp's value: `m + log(s)`; `s >= 1` once a value above `-inf` was
            // folded, and for `m = ±inf` or NaN the sum changes nothing.
            Fx::Acc(a) if self.p.accs.get(*a as usize) == Some(&Acc::LogSumExp) => format!("(a{a} + log(max(t{a}, 1.0)))"),
            Fx::Acc(a) => format!("a{a}"),
            Fx::Ties(a) => format!("max(t{a}, 1.0)"),
            Fx::Int(i) => self.s.to_float(&self.ix(i)),
            Fx::Bin(op, a, b) => {
                let o = match op {
                    FxOp::Add => "+",
                    FxOp::Mul => "*",
                    FxOp::Div => "/",
                };
                format!("({} {o} {})", self.fx(a), self.fx(b))
            }
        }
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for st in body {
            match st {
                Stmt::Let(v, e) => {
                    let l = self.s.let_(false, &format!("v{v}"), &self.ix(e));
                    self.line(&l);
                }
                Stmt::LetF(v, e @ Fx::Index { .. }) => {
                    let l = self.s.let_index(&format!("v{v}"), &self.fx(e));
                    self.line(&l);
                }
                Stmt::LetF(v, e) => {
                    let l = self.s.let_(true, &format!("v{v}"), &self.fx(e));
                    self.line(&l);
                }
                Stmt::Load4 { first, input, at } => {
                    // The index once, in a variable of its own.
                    let b = format!("b{first}");
                    let l = self.s.let_(false, &b, &self.ix(at));
                    self.line(&l);
                    let names: Vec<String> = (0..4).map(|l| format!("v{}", *first as usize + l)).collect();
                    let names = [names[0].as_str(), names[1].as_str(), names[2].as_str(), names[3].as_str()];
                    for l in self.s.load4(*input as usize, self.p.inputs[*input as usize], &b, names) {
                        self.line(&l);
                    }
                }
                Stmt::For { var, lo, hi, bound, body } => {
                    // Bounds once, before the loop.
                    let (l, h) = (format!("lo{var}"), format!("hi{var}"));
                    let a = self.s.let_(false, &l, &self.ix(lo));
                    let b = self.s.let_(false, &h, &self.ix(hi));
                    self.line(&a);
                    self.line(&b);
                    let open = self.s.for_open(&format!("v{var}"), &l, &h, *bound);
                    self.line(&open);
                    self.depth += 1;
                    self.stmts(body);
                    self.depth -= 1;
                    self.line("}");
                }
                Stmt::Reset(a) => {
                    self.line(&format!("a{a} = 0.0;"));
                    self.line(&format!("t{a} = 0.0;"));
                }
                Stmt::Fold { acc, value } => {
                    let v = self.fx(value);
                    match self.p.accs[*acc as usize] {
                        Acc::Sum => self.line(&format!("a{acc} += {v};")),
                        Acc::Last => self.line(&format!("a{acc} = {v};")),
                        Acc::First => {
                            self.line(&format!("if (t{acc} == 0.0) {{"));
                            self.line(&format!("    a{acc} = {v};"));
                            self.line(&format!("    t{acc} = 1.0;"));
                            self.line("}");
                        }
                        Acc::MaxTies => {
                            let t = format!("f{}", self.temps);
                            self.temps += 1;
                            let l = self.s.let_(true, &t, &v);
                            self.line(&l);
                            let c = self.s.or(&[format!("t{acc} == 0.0"), format!("{t} > a{acc}")]);
                            self.line(&format!("if {c} {{"));
                            self.line(&format!("    a{acc} = {t};"));
                            self.line(&format!("    t{acc} = 1.0;"));
                            self.line(&format!("}} else if ({t} == a{acc}) {{"));
                            self.line(&format!("    t{acc} += 1.0;"));
                            self.line("}");
                        }
                        Acc::LogSumExp => {
                            let t = format!("f{}", self.temps);
                            self.temps += 1;
                            let l = self.s.let_(true, &t, &v);
                            self.line(&l);
                            let big = self.s.float_lit(3.4e38);
                            let low = self.s.float_lit(-3.4e38);
                            let (nan_a, nan_v) = (self.s.is_nan(&format!("a{acc}")), self.s.is_nan(&t));
                            self.line(&format!("if ({nan_a}) {{"));
                            self.line(&format!("}} else if ({nan_v}) {{"));
                            self.line(&format!("    a{acc} = {t};"));
                            self.line(&format!("}} else if (t{acc} == 0.0) {{"));
                            self.line(&format!("    a{acc} = {t};"));
                            self.line(&format!("    if ({t} > {low}) {{"));
                            self.line(&format!("        t{acc} = 1.0;"));
                            self.line("    }");
                            self.line(&format!("}} else if ({t} > a{acc}) {{"));
                            self.line(&format!("    t{acc} = t{acc} * exp(a{acc} - {t}) + 1.0;"));
                            self.line(&format!("    a{acc} = {t};"));
                            let c = self.s.and(&[format!("{t} > {low}"), format!("a{acc} < {big}")]);
                            self.line(&format!("}} else if {c} {{"));
                            self.line(&format!("    t{acc} += exp({t} - a{acc});"));
                            self.line("}");
                        }
                    }
                }
                Stmt::FoldLane { acc, value, keep } => self.fold_lane(*acc, value, keep.as_ref()),
                Stmt::Fault(code) => {
                    let l = self.s.fault(*code);
                    self.line(&l);
                }
                Stmt::If { cond, body } => {
                    let l = format!("if ({}) {{", self.cond(cond));
                    self.line(&l);
                    self.depth += 1;
                    self.stmts(body);
                    self.depth -= 1;
                    self.line("}");
                }
            }
        }
    }
}

impl R<'_> {
    /// A new temporary's name (`f_32`, never a type's name such as WGSL's `f32`).
    fn temp(&mut self, kind: &str) -> String {
        self.temps += 1;
        format!("{kind}_{}", self.temps - 1)
    }

    /// [`Stmt::FoldLane`]: the accumulator's rule of [`Stmt::Fold`] (above) as selects, in
    /// straight-line code, applied only where `keep` holds.
    fn fold_lane(&mut self, acc: u8, value: &Fx, keep: Option<&Cond>) {
        let f = self.temp("f");
        let l = self.s.let_(true, &f, &self.fx(value));
        self.line(&l);
        let keep = keep.map(|c| self.cond(c));
        // `c` where the lane is kept.
        let and = |c: String| match &keep {
            Some(k) => self.s.and(&[k.clone(), c]),
            None => c,
        };
        let (a, t) = (format!("a{acc}"), format!("t{acc}"));
        let let_bool = |r: &mut Self, value: String| {
            let b = r.temp("c");
            let l = r.s.let_bool(&b, &value);
            r.line(&l);
            b
        };
        let sel = |c: &str, x: &str, y: &str| self.s.select(c, x, y);
        match self.p.accs[acc as usize] {
            Acc::Sum => {
                let v = match &keep {
                    Some(k) => sel(k, &f, &self.s.float_lit(0.0)),
                    None => f.clone(),
                };
                // The sum starts at +0 and so is never -0: adding +0 changes nothing.
                self.line(&format!("{a} += {v};"));
            }
            Acc::Last => {
                let v = match &keep {
                    Some(k) => sel(k, &f, &a),
                    None => f.clone(),
                };
                self.line(&format!("{a} = {v};"));
            }
            Acc::First => {
                let take = let_bool(self, and(format!("({t} == 0.0)")));
                let sel = |c: &str, x: &str, y: &str| self.s.select(c, x, y);
                self.line(&format!("{a} = {};", sel(&take, &f, &a)));
                self.line(&format!("{t} = {};", sel(&take, "1.0", &t)));
            }
            Acc::MaxTies => {
                let first = self.s.or(&[format!("{t} == 0.0"), format!("{f} > {a}")]);
                let take = let_bool(self, and(first.clone()));
                let tie = let_bool(self, and(self.s.and(&[format!("!{first}"), format!("{f} == {a}")])));
                let sel = |c: &str, x: &str, y: &str| self.s.select(c, x, y);
                let (na, nt) = (sel(&take, &f, &a), sel(&take, "1.0", &sel(&tie, &format!("({t} + 1.0)"), &t)));
                self.line(&format!("{t} = {nt};"));
                self.line(&format!("{a} = {na};"));
            }
            Acc::LogSumExp => {
                let (big, low) = (self.s.float_lit(3.4e38), self.s.float_lit(-3.4e38));
                let (nan_a, nan_f) = (self.s.is_nan(&a), self.s.is_nan(&f));
                // Nothing changes once the maximum is NaN; a NaN value becomes it.
                let live = let_bool(self, and(format!("!({nan_a})")));
                let num = let_bool(self, self.s.and(&[live.clone(), format!("!({nan_f})")]));
                let empty = format!("({t} == 0.0)");
                let greater = format!("({f} > {a})");
                let take = {
                    let any = self.s.or(&[format!("({nan_f})"), empty.clone(), greater.clone()]);
                    let_bool(self, self.s.and(&[live.clone(), any]))
                };
                let one = let_bool(self, self.s.and(&[num.clone(), empty.clone(), format!("{f} > {low}")]));
                let up = let_bool(self, self.s.and(&[num.clone(), format!("!{empty}"), greater.clone()]));
                let add = let_bool(
                    self,
                    self.s.and(&[num.clone(), format!("!{empty}"), format!("!{greater}"), format!("{f} > {low}"), format!("{a} < {big}")]),
                );
                // exp(a - f) for `up`, exp(f - a) for `add`: one exponential (negation is exact).
                let e = self.temp("e");
                let l = self.s.let_(true, &e, &format!("exp(-abs({f} - {a}))"));
                self.line(&l);
                let sel = |c: &str, x: &str, y: &str| self.s.select(c, x, y);
                let nt = sel(&one, "1.0", &sel(&up, &format!("({t} * {e} + 1.0)"), &sel(&add, &format!("({t} + {e})"), &t)));
                self.line(&format!("{t} = {nt};"));
                self.line(&format!("{a} = {};", sel(&take, &f, &a)));
            }
        }
    }
}

/// `p` in the language `s`.
pub fn render_program(p: &Program, s: &dyn Spelling) -> Rendered {
    let mut r = R { p, s, out: String::new(), depth: 1, temps: 0 };
    for (i, _) in p.accs.iter().enumerate() {
        let a = s.var(&format!("a{i}"), "0.0");
        let t = s.var(&format!("t{i}"), "0.0");
        r.line(&a);
        r.line(&t);
    }
    r.stmts(&p.body);
    let result = r.fx(&p.out);
    Rendered { declarations: s.declarations(p), function: s.function(&r.out, &result) }
}
