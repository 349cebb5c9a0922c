//! A Rényi-DP accountant for the (Poisson-subsampled) Gaussian mechanism, reporting the
//! cumulative (ε, δ) of the releases composed so far. The same computations as Google's
//! `dp-accounting` `RdpAccountant` (the backend of flwr's own `flwr[dp]` accountant), which
//! `tests/accountant.rs` uses as the oracle:
//!
//! - RDP of order α of one release with sampling rate `q` and noise multiplier `z` (noise
//!   standard deviation over L2 sensitivity): `α / (2 z²)` when `q = 1`; otherwise
//!   `log A_α / (α - 1)` with `A_α` the binomial sum for integer α and the two-series form of
//!   Mironov, Talwar and Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism"
//!   (arXiv:1908.10530, §3.3) for fractional α;
//! - RDP adds up over releases, per order;
//! - ε at δ is the minimum over the orders of `rdp + ln(1 - 1/α) - ln(δ α) / (α - 1)`
//!   (Balle et al. 2020, Prop. 12; Canonne, Kamath, Steinke 2020, eq. 20), 0 where
//!   `δ² + expm1(-rdp) > 0`;
//! - orders: 1.1, 1.2, …, 10.9, then 11 … 63, 128, 256, 512, 1024 (dp-accounting's defaults).

/// dp-accounting's default RDP orders.
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|x| 1.0 + x as f64 / 10.0).collect();
    v.extend((11..64).map(|x| x as f64));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    (a - b).exp().ln_1p() + b
}

fn log_comb(n: f64, k: f64) -> f64 {
    libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0)
}

/// ln(erfc(x)), accurate far into the tail.
fn log_erfc(x: f64) -> f64 {
    let r = libm::erfc(x);
    if r > 1e-300 {
        r.ln()
    } else {
        // Laurent series of ln(erfc(x)) + ln(x) + ln(π)/2 + x² at infinity
        let x2 = x * x;
        -std::f64::consts::PI.ln() / 2.0 - x.ln() - x2 - 0.5 / x2 + 0.625 / (x2 * x2)
            - 37.0 / 24.0 / (x2 * x2 * x2)
            + 353.0 / 64.0 / (x2 * x2 * x2 * x2)
    }
}

fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let mut log_a = f64::NEG_INFINITY;
    let log1mq = (-q).ln_1p();
    for i in 0..=alpha {
        let (i, a) = (i as f64, alpha as f64);
        let coef = log_comb(a, i) + i * q.ln() + (a - i) * log1mq;
        log_a = log_add(log_a, coef + (i * i - i) / (2.0 * sigma * sigma));
    }
    log_a
}

fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    let log1mq = (-q).ln_1p();
    let (mut last_s0, mut last_s1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let s2 = std::f64::consts::SQRT_2 * sigma;
    for i in 0..1000 {
        let i = i as f64;
        let coef = log_comb(alpha, i);
        let j = alpha - i;
        let t0 = coef + i * q.ln() + j * log1mq;
        let t1 = coef + j * q.ln() + i * log1mq;
        let e0 = 0.5f64.ln() + log_erfc((i - z0) / s2);
        let e1 = 0.5f64.ln() + log_erfc((z0 - j) / s2);
        let s0 = t0 + (i * i - i) / (2.0 * sigma * sigma) + e0;
        let s1 = t1 + (j * j - j) / (2.0 * sigma * sigma) + e1;
        log_a0 = log_add(log_a0, s0);
        log_a1 = log_add(log_a1, s1);
        let total = log_add(log_a0, log_a1);
        if s0 < last_s0 && s1 < last_s1 && s0.max(s1) < total - 30.0 {
            return total;
        }
        last_s0 = s0;
        last_s1 = s1;
    }
    // did not converge: the order is left out (as dp-accounting does)
    f64::INFINITY
}

/// RDP of order `alpha` of one Gaussian release with sampling rate `q`, noise multiplier `z`.
pub fn rdp_sampled_gaussian(q: f64, z: f64, alpha: f64) -> f64 {
    if q == 0.0 {
        return 0.0;
    }
    if alpha.is_infinite() || z == 0.0 {
        return f64::INFINITY;
    }
    if q == 1.0 {
        return alpha / (2.0 * z * z);
    }
    let log_a = if alpha.fract() == 0.0 {
        log_a_int(q, z, alpha as u64)
    } else {
        log_a_frac(q, z, alpha)
    };
    log_a / (alpha - 1.0)
}

/// ε at `delta` from RDP values per order, and the order that gives it.
pub fn epsilon_from_rdp(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, orders.first().copied().unwrap_or(0.0));
    for (&a, &r) in orders.iter().zip(rdp) {
        let eps = if r < 0.0 || delta * delta + (-r).exp_m1() > 0.0 {
            0.0
        } else if a > 1.01 {
            r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
        } else {
            f64::INFINITY
        };
        if eps < best.0 {
            best = (eps, a);
        }
    }
    (best.0.max(0.0), best.1)
}

/// Cumulative privacy loss of the Gaussian releases composed so far.
#[derive(Clone, Debug, PartialEq)]
pub struct RdpAccountant {
    orders: Vec<f64>,
    rdp: Vec<f64>,
    releases: u64,
}

impl Default for RdpAccountant {
    fn default() -> Self {
        Self::new()
    }
}

impl RdpAccountant {
    /// An accountant with dp-accounting's default orders and nothing spent.
    pub fn new() -> Self {
        let orders = default_orders();
        let rdp = vec![0.0; orders.len()];
        RdpAccountant {
            orders,
            rdp,
            releases: 0,
        }
    }

    /// Adds `count` releases of the Gaussian mechanism with noise multiplier `z`, each on a
    /// Poisson sample of rate `q` (1 = no sampling).
    pub fn compose(&mut self, q: f64, z: f64, count: u64) {
        for (r, &a) in self.rdp.iter_mut().zip(&self.orders) {
            *r += count as f64 * rdp_sampled_gaussian(q, z, a);
        }
        self.releases += count;
    }

    /// The cumulative ε at `delta`.
    pub fn epsilon(&self, delta: f64) -> f64 {
        if self.releases == 0 {
            return 0.0;
        }
        epsilon_from_rdp(&self.orders, &self.rdp, delta).0
    }

    /// The ε at `delta` there would be after `count` more releases of `(q, z)` (nothing is
    /// spent).
    pub fn epsilon_after(&self, q: f64, z: f64, count: u64, delta: f64) -> f64 {
        let mut next = self.clone();
        next.compose(q, z, count);
        next.epsilon(delta)
    }

    /// Releases composed so far.
    pub fn releases(&self) -> u64 {
        self.releases
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_and_basic_behaviour() {
        let o = default_orders();
        assert_eq!(o.len(), 99 + 53 + 4);
        assert_eq!(o[0], 1.1);
        let mut a = RdpAccountant::new();
        assert_eq!(a.epsilon(1e-5), 0.0);
        a.compose(1.0, 1.0, 1);
        let e1 = a.epsilon(1e-5);
        a.compose(1.0, 1.0, 9);
        let e10 = a.epsilon(1e-5);
        assert!(e1 > 0.0 && e10 > e1 && e10 < 10.0 * e1, "{e1} {e10}");
        // sampling amplifies: the same noise on a 1 % sample costs far less
        let mut s = RdpAccountant::new();
        s.compose(0.01, 1.0, 10);
        assert!(s.epsilon(1e-5) < e10 / 5.0);
        // more noise, less epsilon; no noise, no bound
        assert!(RdpAccountant::new().epsilon_after(1.0, 4.0, 10, 1e-5) < e10);
        assert!(RdpAccountant::new()
            .epsilon_after(1.0, 0.0, 1, 1e-5)
            .is_infinite());
    }

    #[test]
    fn tail_of_log_erfc_is_continuous() {
        // where erfc underflows the series takes over without a jump
        let a = log_erfc(26.0);
        let b = log_erfc(27.5);
        assert!(a.is_finite() && b.is_finite() && b < a);
        assert!((log_erfc(1.0) - libm::erfc(1.0).ln()).abs() < 1e-15);
    }
}
