//! The cross-check's result: one row per tensor per step (max absolute and relative error
//! against the reference, the tolerance, pass or fail), the first failing row, a text table
//! and JSON.

use serde_json::{json, Value};

use super::{Captured, CheckConfig, Tolerance};

/// One compared tensor of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorCheck {
    /// 0-based step.
    pub step: usize,
    pub name: String,
    /// The op that produced the tensor.
    pub op: String,
    pub shape: Vec<usize>,
    pub max_abs: f64,
    /// Largest `|got - want| / |want|` over elements whose `want` is not 0.
    pub max_rel: f64,
    /// Element with the largest excess over its bound (or largest difference when all pass).
    pub worst: usize,
    pub tol: Tolerance,
    pub pass: bool,
}

/// What [`super::run`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    pub backend: String,
    pub reference: String,
    pub config: CheckConfig,
    pub rows: Vec<TensorCheck>,
}

impl CheckReport {
    pub(crate) fn new(cfg: &CheckConfig, backend: String, reference: String) -> CheckReport {
        CheckReport { backend, reference, config: cfg.clone(), rows: Vec::new() }
    }

    pub(crate) fn push(&mut self, step: usize, c: &Captured, got: &[f32], want: &[f64]) {
        let (mut max_abs, mut max_rel, mut worst, mut worst_excess) = (0.0f64, 0.0f64, 0usize, f64::NEG_INFINITY);
        let mut pass = got.len() == want.len();
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let g = g as f64;
            let d = (g - w).abs();
            let ok = if g.is_nan() || w.is_nan() {
                g.is_nan() && w.is_nan()
            } else if g.is_infinite() || w.is_infinite() {
                g == w
            } else {
                d <= c.tol.abs + c.tol.rel * w.abs()
            };
            let d = if ok && !d.is_finite() { 0.0 } else { d };
            let excess = if d.is_nan() { f64::INFINITY } else { d - (c.tol.abs + c.tol.rel * w.abs()) };
            if excess > worst_excess {
                worst_excess = excess;
                worst = i;
            }
            max_abs = max_abs.max(if d.is_nan() { f64::INFINITY } else { d });
            if w != 0.0 && w.is_finite() {
                max_rel = max_rel.max(d / w.abs());
            }
            pass &= ok;
        }
        self.rows.push(TensorCheck {
            step,
            name: c.name.clone(),
            op: c.op.to_string(),
            shape: c.tensor.dims().to_vec(),
            max_abs,
            max_rel,
            worst,
            tol: c.tol,
            pass,
        });
    }

    /// True when every tensor of every step is within its tolerance.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.pass)
    }

    /// The first tensor (in computation order, earliest step first) outside its tolerance.
    pub fn first_failure(&self) -> Option<&TensorCheck> {
        self.rows.iter().find(|r| !r.pass)
    }

    /// One line: pass, or the first failing tensor with its op, step and error.
    pub fn summary(&self) -> String {
        let n = self.rows.len();
        match self.first_failure() {
            None => format!("PASS: {n} tensors over {} steps within tolerance ({} vs {})", self.config.steps, self.backend, self.reference),
            Some(r) => format!(
                "FAIL: first tensor outside tolerance: {} (step {}, produced by {}), max abs error {:.3e} (bound {:.1e} + {:.1e}·|ref|) at element {} ({} vs {})",
                r.name,
                r.step + 1,
                r.op,
                r.max_abs,
                r.tol.abs,
                r.tol.rel,
                r.worst,
                self.backend,
                self.reference
            ),
        }
    }

    /// The table: one row per tensor per step, the first failure marked `<- FIRST FAILURE`.
    pub fn table(&self) -> String {
        let first = self.rows.iter().position(|r| !r.pass);
        let mut s = format!(
            "cross-check {} against {}: layers {:?}, {}, batch {}, lr {}, seed {}\n",
            self.backend,
            self.reference,
            self.config.layers,
            self.config.activation.as_str(),
            self.config.batch,
            self.config.lr,
            self.config.seed
        );
        s += &format!(
            "{:>4}  {:<18} {:<10} {:<34} {:>10} {:>10} {:>9}  result\n",
            "step", "tensor", "shape", "op", "max abs", "max rel", "tol rel"
        );
        for (i, r) in self.rows.iter().enumerate() {
            let shape = format!("{:?}", r.shape);
            let mark = match (r.pass, Some(i) == first) {
                (true, _) => "ok",
                (false, true) => "FAIL  <- FIRST FAILURE",
                (false, false) => "FAIL",
            };
            s += &format!(
                "{:>4}  {:<18} {:<10} {:<34} {:>10.3e} {:>10.3e} {:>9.1e}  {mark}\n",
                r.step + 1,
                r.name,
                shape,
                r.op,
                r.max_abs,
                r.max_rel,
                r.tol.rel
            );
        }
        s += &self.summary();
        s.push('\n');
        s
    }

    /// `{ passed, backend, reference, config, firstFailure, rows: [...] }` (camelCase keys, for
    /// the CLI's `--json` and JS).
    pub fn to_json(&self) -> Value {
        let row = |r: &TensorCheck| {
            json!({
                "step": r.step + 1, "tensor": r.name, "op": r.op, "shape": r.shape,
                "maxAbs": finite(r.max_abs), "maxRel": finite(r.max_rel), "worstIndex": r.worst,
                "tolAbs": r.tol.abs, "tolRel": r.tol.rel, "pass": r.pass,
            })
        };
        json!({
            "passed": self.passed(),
            "summary": self.summary(),
            "backend": self.backend,
            "reference": self.reference,
            "config": {
                "layers": self.config.layers, "activation": self.config.activation.as_str(), "steps": self.config.steps,
                "batch": self.config.batch, "lr": self.config.lr, "seed": self.config.seed, "toleranceScale": self.config.tolerance_scale,
            },
            "firstFailure": self.first_failure().map(row),
            "rows": self.rows.iter().map(row).collect::<Vec<_>>(),
        })
    }
}

/// JSON has no infinity: a non-finite error is written as `null`.
fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}
