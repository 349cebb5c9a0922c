//! Seeded data partitions for federations: non-IID label shards drawn from a Dirichlet(α)
//! distribution per class (as `flwr-datasets`' `DirichletPartitioner` defines them: for every
//! class, its samples are split among the N partitions in proportions drawn from Dir(α·1)),
//! and IID equal splits. The same seed gives the same partitions natively and in wasm (the
//! random numbers are `pixelgrad-core`'s counter-based Philox).

use pixelgrad_core::rng;

use crate::{FlowerError, Result};

/// Smallest partition [`dirichlet`] accepts before drawing again.
pub const MIN_PARTITION: usize = 10;

/// `I/N` as the CLI writes it (`0/4` .. `3/4`).
pub fn parse_partition(s: &str) -> Result<(usize, usize)> {
    let bad = || {
        FlowerError::Invalid(format!(
            "--partition '{s}' must be I/N with 0 <= I < N (e.g. 0/4)"
        ))
    };
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// A seeded stream of uniform and normal numbers.
struct Stream {
    seed: u64,
    i: u64,
}

impl Stream {
    fn uniform(&mut self) -> f64 {
        self.i += 1;
        // Open interval (0, 1): the generator's unit floats may be 0.
        (rng::uniform(self.seed, self.i) as f64).clamp(1e-12, 1.0 - 1e-12)
    }
    fn normal(&mut self) -> f64 {
        self.i += 1;
        rng::normal(self.seed, self.i) as f64
    }
    /// Gamma(shape, 1) by Marsaglia and Tsang; shapes below 1 through `G(a+1) * U^(1/a)`.
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.uniform();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}

fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let w = rng::words(seed, i as u64);
        let r = (((w[0] as u64) << 32) | w[1] as u64) % (i as u64 + 1);
        v.swap(i, r as usize);
    }
    v
}

/// Splits the indices of `labels` into `n` non-IID partitions: each class's samples (in a
/// seeded order) are cut in Dirichlet(`alpha`) proportions. Draws again (next seed stream)
/// until every partition holds at least [`MIN_PARTITION`] samples, up to 100 times.
pub fn dirichlet(labels: &[u32], n: usize, alpha: f64, seed: u64) -> Result<Vec<Vec<usize>>> {
    if n == 0 {
        return Err(FlowerError::Invalid(
            "a federation needs at least one partition".into(),
        ));
    }
    if !(alpha > 0.0 && alpha.is_finite()) {
        return Err(FlowerError::Invalid(format!(
            "--alpha must be a positive number, got {alpha}"
        )));
    }
    if labels.len() < n * MIN_PARTITION {
        return Err(FlowerError::Invalid(format!(
            "{} samples cannot fill {n} partitions of at least {MIN_PARTITION}",
            labels.len()
        )));
    }
    let classes = labels
        .iter()
        .copied()
        .max()
        .map(|m| m as usize + 1)
        .unwrap_or(0);
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); classes];
    for &i in &permutation(labels.len(), rng::mix(seed, 0x5eed)) {
        by_class[labels[i] as usize].push(i);
    }
    for attempt in 0..100u64 {
        let mut s = Stream {
            seed: rng::mix(seed, attempt + 1),
            i: 0,
        };
        let mut parts: Vec<Vec<usize>> = vec![Vec::new(); n];
        for idx in &by_class {
            let g: Vec<f64> = (0..n).map(|_| s.gamma(alpha)).collect();
            let total: f64 = g.iter().sum();
            let mut start = 0usize;
            let mut acc = 0.0;
            for (p, gi) in g.iter().enumerate() {
                acc += gi / total;
                let end = if p + 1 == n {
                    idx.len()
                } else {
                    ((acc * idx.len() as f64).round() as usize).min(idx.len())
                };
                parts[p].extend_from_slice(&idx[start..end.max(start)]);
                start = end.max(start);
            }
        }
        if parts.iter().all(|p| p.len() >= MIN_PARTITION) {
            for p in &mut parts {
                p.sort_unstable();
            }
            return Ok(parts);
        }
    }
    Err(FlowerError::Invalid(format!(
        "no Dirichlet({alpha}) split of {} samples into {n} partitions gave each at least {MIN_PARTITION} samples in 100 draws; raise --alpha or use fewer partitions",
        labels.len()
    )))
}

/// `n` equal parts of a seeded permutation of `0..len` (the first `len % n` one larger).
pub fn iid(len: usize, n: usize, seed: u64) -> Result<Vec<Vec<usize>>> {
    if n == 0 || len < n {
        return Err(FlowerError::Invalid(format!(
            "{len} samples cannot be split into {n} partitions"
        )));
    }
    let perm = permutation(len, rng::mix(seed, 0x11d));
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b) = (i * len / n, (i + 1) * len / n);
        let mut p = perm[a..b].to_vec();
        p.sort_unstable();
        parts.push(p);
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Vec<u32> {
        (0..2000).map(|i| (i % 10) as u32).collect()
    }

    #[test]
    fn dirichlet_covers_every_sample_once_and_is_seeded() {
        let l = labels();
        let p = dirichlet(&l, 5, 0.5, 7).unwrap();
        let mut all: Vec<usize> = p.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..l.len()).collect::<Vec<_>>());
        assert_eq!(p, dirichlet(&l, 5, 0.5, 7).unwrap());
        assert_ne!(p, dirichlet(&l, 5, 0.5, 8).unwrap());
    }

    #[test]
    fn small_alpha_skews_labels_large_alpha_does_not() {
        let l = labels();
        // Largest share of one class within a partition, averaged over partitions.
        let skew = |alpha: f64| {
            let p = dirichlet(&l, 4, alpha, 3).unwrap();
            p.iter()
                .map(|part| {
                    let mut c = [0usize; 10];
                    part.iter().for_each(|&i| c[l[i] as usize] += 1);
                    *c.iter().max().unwrap() as f64 / part.len() as f64
                })
                .sum::<f64>()
                / 4.0
        };
        let (lo, hi) = (skew(0.1), skew(1000.0));
        assert!(lo > 0.3, "alpha 0.1 should concentrate labels: {lo}");
        assert!(hi < 0.15, "alpha 1000 should be near uniform: {hi}");
    }

    #[test]
    fn iid_and_parsing() {
        let p = iid(103, 4, 1).unwrap();
        assert_eq!(p.iter().map(Vec::len).sum::<usize>(), 103);
        assert!(p.iter().all(|x| x.len() == 25 || x.len() == 26));
        assert_eq!(parse_partition("2/4").unwrap(), (2, 4));
        for bad in ["4/4", "x", "1/0", "-1/3"] {
            assert!(parse_partition(bad).is_err(), "{bad}");
        }
        assert!(dirichlet(&labels(), 3, 0.0, 1).is_err());
    }
}
