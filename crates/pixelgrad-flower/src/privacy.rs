//! What a node lets a server learn, and the privacy budget it keeps (the server can change
//! neither: they are the node's options, never read from a message).
//!
//! - [`ShareMetrics`]: `Minimal` (the default) sends only what the strategy needs: a train
//!   reply carries the example count rounded to two significant digits (at least 1) and no
//!   loss or accuracy; under SecAgg+ it carries 1 (the count travels inside the masked
//!   vector); an evaluate instruction is run locally (the node's own `onRound` sees the
//!   result) and answered with an error reply, so weights the server chose are never scored
//!   on the node's data for the server. `All` sends exact counts, train loss and accuracy,
//!   and evaluation results.
//! - [`DistributedDp`]: with SecAgg+, each node clips its update to `C` and adds
//!   `N(0, (z C)^2 / t)`, `t` the round's reconstruction threshold: the sum the server unmasks
//!   holds the noise of at least `t` nodes, so it has noise multiplier at least `z` for the
//!   L2 sensitivity `C` of one node's clipped update (its data replaced by none: add/remove
//!   one node), if those `t` nodes are honest. The node's own noise alone gives `z / sqrt(t)`
//!   (reported as the worst case).
//! - local DP ([`crate::dp::LocalDp`], Flower's `LocalDpMod`): the node clips to `C` and adds
//!   `N(0, s^2)` with `s = sensitivity sqrt(2 ln(1.25/δ)) / ε`; the node's clipped update has
//!   L2 sensitivity `C` (add/remove), so one round is a Gaussian release of noise multiplier
//!   `s / C`.
//! - [`Budget`]: the node's Rényi-DP accountant over the rounds it released an update in
//!   (one Gaussian release per round, no sampling amplification: a node cannot verify how it
//!   was sampled), reporting the cumulative ε at the mode's δ; with `max_epsilon` a round that
//!   would take ε past it is refused before training, with an error reply saying so.

use crate::accountant::RdpAccountant;
use crate::dp::LocalDp;
use crate::{FlowerError, Result};

/// What a node's replies carry besides its (masked or noised) parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShareMetrics {
    #[default]
    Minimal,
    All,
}

impl ShareMetrics {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "minimal" => Ok(ShareMetrics::Minimal),
            "all" => Ok(ShareMetrics::All),
            other => Err(FlowerError::Invalid(format!(
                "share metrics must be 'minimal' or 'all', got '{other}'"
            ))),
        }
    }
}

/// An example count rounded to two significant digits, at least 1 (what `Minimal` reports).
pub fn rounded_count(n: usize) -> i64 {
    if n < 100 {
        return n.max(1) as i64;
    }
    let mut scale = 1usize;
    while n / scale >= 100 {
        scale *= 10;
    }
    (((n + scale / 2) / scale) * scale) as i64
}

/// Distributed DP under SecAgg+ (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistributedDp {
    pub noise_multiplier: f64,
    pub clipping_norm: f64,
    pub delta: f64,
}

impl DistributedDp {
    pub fn new(noise_multiplier: f64, clipping_norm: f64, delta: f64) -> Result<Self> {
        let bad = |m: &str| Err(FlowerError::Invalid(format!("distributed DP: {m}")));
        if !(noise_multiplier > 0.0 && noise_multiplier.is_finite()) {
            return bad("the noise multiplier must be a positive number");
        }
        if !(clipping_norm > 0.0 && clipping_norm.is_finite()) {
            return bad("the clipping norm must be a positive number");
        }
        if !(delta > 0.0 && delta < 1.0) {
            return bad("delta must be in (0, 1)");
        }
        Ok(DistributedDp {
            noise_multiplier,
            clipping_norm,
            delta,
        })
    }
    /// This node's noise standard deviation when the round's threshold is `t`.
    pub fn node_std(&self, t: u64) -> f64 {
        self.noise_multiplier * self.clipping_norm / (t.max(1) as f64).sqrt()
    }
}

/// The noise a node adds in a round, as the accountant sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Release {
    /// Noise multiplier of what the server can see (sum or single update).
    pub z: f64,
    /// Noise multiplier of the node's own noise alone.
    pub z_own: f64,
}

impl Release {
    pub fn local(l: &LocalDp) -> Release {
        let z = l.std_dev() / l.clipping_norm;
        Release { z, z_own: z }
    }
    pub fn distributed(d: &DistributedDp, threshold: u64) -> Release {
        Release {
            z: d.noise_multiplier,
            z_own: d.noise_multiplier / (threshold.max(1) as f64).sqrt(),
        }
    }
}

/// The node's cumulative privacy loss and its limit.
#[derive(Clone, Debug)]
pub struct Budget {
    pub delta: f64,
    pub max_epsilon: Option<f64>,
    spent: RdpAccountant,
    own: RdpAccountant,
}

impl Budget {
    pub fn new(delta: f64, max_epsilon: Option<f64>) -> Result<Self> {
        if let Some(m) = max_epsilon {
            if !(m > 0.0 && m.is_finite()) {
                return Err(FlowerError::Invalid(format!(
                    "the maximum epsilon must be a positive number, got {m}"
                )));
            }
        }
        Ok(Budget {
            delta,
            max_epsilon,
            spent: RdpAccountant::new(),
            own: RdpAccountant::new(),
        })
    }
    /// ε so far (at `delta`), and with the node's own noise only.
    pub fn epsilon(&self) -> (f64, f64) {
        (self.spent.epsilon(self.delta), self.own.epsilon(self.delta))
    }
    /// Refuses a release that would take ε past the maximum (nothing is spent).
    pub fn check(&self, r: &Release) -> Result<f64> {
        let next = self.spent.epsilon_after(1.0, r.z, 1, self.delta);
        match self.max_epsilon {
            Some(m) if next > m => Err(FlowerError::Budget {
                epsilon: self.epsilon().0,
                next,
                max: m,
                delta: self.delta,
            }),
            _ => Ok(next),
        }
    }
    /// Records a release.
    pub fn spend(&mut self, r: &Release) {
        self.spent.compose(1.0, r.z, 1);
        self.own.compose(1.0, r.z_own, 1);
    }
    pub fn releases(&self) -> u64 {
        self.spent.releases()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_to_two_digits() {
        assert_eq!(rounded_count(0), 1);
        assert_eq!(rounded_count(37), 37);
        assert_eq!(rounded_count(362), 360);
        assert_eq!(rounded_count(365), 370);
        assert_eq!(rounded_count(5843), 5800);
        assert_eq!(rounded_count(59_999), 60_000);
    }

    #[test]
    fn the_budget_refuses_what_would_exceed_it() {
        let l = LocalDp::new(1.0, 1.0, 1.0, 1e-5).unwrap();
        let r = Release::local(&l);
        // sigma / C = sqrt(2 ln 125000) for epsilon 1, whatever C
        assert!((r.z - (2.0 * 125_000f64.ln()).sqrt()).abs() < 1e-12);
        let mut b = Budget::new(1e-5, Some(3.0)).unwrap();
        let mut rounds = 0;
        while b.check(&r).is_ok() {
            b.spend(&r);
            rounds += 1;
            assert!(rounds < 1000);
        }
        assert!(rounds >= 1 && b.epsilon().0 <= 3.0);
        let e = b.check(&r).unwrap_err();
        assert!(matches!(e, FlowerError::Budget { .. }));
        assert!(e.to_string().contains("privacy budget"), "{e}");
        assert!(Budget::new(1e-5, Some(-1.0)).is_err());
        // the node's own noise alone is the worse bound under distributed DP
        let d = DistributedDp::new(1.0, 2.0, 1e-5).unwrap();
        assert!((d.node_std(4) - 1.0).abs() < 1e-12);
        let mut b = Budget::new(1e-5, None).unwrap();
        b.spend(&Release::distributed(&d, 4));
        let (e, own) = b.epsilon();
        assert!(own > e);
    }
}
