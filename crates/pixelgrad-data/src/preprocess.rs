//! Preprocessing: normalisation, train/test splits, one-hot labels.

use crate::dataset::{Dataset, Split};
use crate::error::{invalid, Result};
use crate::shuffle::shuffled_indices;

impl Dataset {
    /// Maps every pixel `x` to `(x - mean) / std`. `std` must be finite and positive.
    ///
    /// Use the *training* set's statistics for the test set too (see
    /// [`Dataset::standardize`]); MNIST's usual values are `mean = 0.1307, std = 0.3081`.
    pub fn normalize(&mut self, mean: f32, std: f32) -> Result<()> {
        if !(std.is_finite() && std > 0.0 && mean.is_finite()) {
            return Err(invalid(
                "Dataset::normalize",
                format!("mean {mean} must be finite and std {std} finite and > 0"),
            ));
        }
        let inv = 1.0 / std;
        self.images_mut()
            .iter_mut()
            .for_each(|v| *v = (*v - mean) * inv);
        Ok(())
    }

    /// Normalises with this set's own mean and standard deviation (over all pixels) and
    /// returns them as `(mean, std)`, so the same transform can be applied to the test set
    /// with [`Dataset::normalize`]. A constant set (std 0) is only centred (std reported 1).
    pub fn standardize(&mut self) -> (f32, f32) {
        let (mean, std) = self.pixel_stats();
        let std = if std > 0.0 && std.is_finite() {
            std
        } else {
            1.0
        };
        let inv = 1.0 / std;
        self.images_mut()
            .iter_mut()
            .for_each(|v| *v = (*v - mean) * inv);
        (mean, std)
    }

    /// Mean and population standard deviation of all pixels, accumulated in f64 so large
    /// sets (MNIST has 47 million pixels) do not lose precision. `(0, 0)` when empty.
    pub fn pixel_stats(&self) -> (f32, f32) {
        let x = self.images();
        if x.is_empty() {
            return (0.0, 0.0);
        }
        let n = x.len() as f64;
        let mean = x.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let var = x
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean as f32, var.sqrt() as f32)
    }
}

/// Splits `ds` at random into train and test sets: `round(n * test_fraction)` samples go to
/// the test set. The order is a seeded shuffle ([`shuffled_indices`]), so the same seed always
/// gives the same split; both halves keep the shuffled order. `test_fraction` must be in
/// `[0, 1)` and leave at least one training sample.
pub fn train_test_split(ds: &Dataset, test_fraction: f64, seed: u64) -> Result<Split> {
    if !(0.0..1.0).contains(&test_fraction) {
        return Err(invalid(
            "train_test_split",
            format!("test_fraction {test_fraction} must be in [0, 1)"),
        ));
    }
    let n = ds.len();
    let n_test = ((n as f64) * test_fraction).round() as usize;
    if n_test >= n {
        return Err(invalid(
            "train_test_split",
            format!("test_fraction {test_fraction} of {n} samples leaves no training samples"),
        ));
    }
    let order = shuffled_indices(n, seed);
    let (test_idx, train_idx) = order.split_at(n_test);
    Ok(Split {
        train: ds.subset(train_idx, format!("{}-train", ds.name()))?,
        test: ds.subset(test_idx, format!("{}-test", ds.name()))?,
    })
}

/// One-hot encodes `labels`: `labels.len() x classes` row-major, 1.0 at each label's column.
pub fn one_hot(labels: &[u32], classes: usize) -> Result<Vec<f32>> {
    let len = labels.len().checked_mul(classes).ok_or_else(|| {
        invalid(
            "one_hot",
            format!("{} labels x {classes} classes overflows", labels.len()),
        )
    })?;
    let mut out = vec![0.0f32; len];
    for (row, &l) in labels.iter().enumerate() {
        if l as usize >= classes {
            return Err(invalid(
                "one_hot",
                format!("label {l} at position {row} is not below classes = {classes}"),
            ));
        }
        out[row * classes + l as usize] = 1.0;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds() -> Dataset {
        let images: Vec<f32> = (0..40).map(|v| v as f32).collect();
        let labels = (0..10).map(|v| v % 2).collect();
        Dataset::new("p", images, labels, [1, 2, 2], 2).unwrap()
    }

    #[test]
    fn standardize_gives_zero_mean_unit_std() {
        let mut d = ds();
        let (m, s) = d.standardize();
        assert!((m - 19.5).abs() < 1e-5);
        assert!(s > 11.0 && s < 12.0);
        let (m2, s2) = d.pixel_stats();
        assert!(m2.abs() < 1e-5 && (s2 - 1.0).abs() < 1e-5, "{m2} {s2}");
    }

    #[test]
    fn normalize_checks_std() {
        let mut d = ds();
        assert!(d.normalize(0.0, 0.0).is_err());
        d.normalize(1.0, 2.0).unwrap();
        assert_eq!(d.images()[3], 1.0);
    }

    #[test]
    fn split_sizes_and_disjointness() {
        let d = ds();
        let s = train_test_split(&d, 0.3, 5).unwrap();
        assert_eq!((s.train.len(), s.test.len()), (7, 3));
        let mut firsts: Vec<f32> = s
            .train
            .images()
            .chunks(4)
            .chain(s.test.images().chunks(4))
            .map(|c| c[0])
            .collect();
        firsts.sort_by(f32::total_cmp);
        assert_eq!(firsts, (0..10).map(|v| (v * 4) as f32).collect::<Vec<_>>());
        assert!(train_test_split(&d, 1.0, 0).is_err());
        assert!(train_test_split(&d, 0.96, 0).is_err());
    }

    #[test]
    fn one_hot_rows() {
        assert_eq!(
            one_hot(&[1, 0], 3).unwrap(),
            vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
        );
        assert!(one_hot(&[3], 3)
            .unwrap_err()
            .to_string()
            .contains("label 3 at position 0"));
    }
}
