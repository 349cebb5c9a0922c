//! The embedded 8x8 handwritten digits set (UCI "Optical Recognition of Handwritten Digits",
//! CC BY 4.0, the copy scikit-learn ships as `digits.csv.gz`; attribution in `NOTICE`).
//!
//! 1,797 samples, 10 classes, 8x8 pixels with values `0..=16` (counts of set pixels in 4x4
//! blocks of the original 32x32 bitmaps). Embedding it (57 KB) gives every build, including
//! the browser one, a real data set that needs no download.

use crate::csv::{parse_csv, CsvOptions, PixelScale};
use crate::dataset::{Dataset, Split};
use crate::error::{invalid, Result};
use crate::preprocess::train_test_split;

/// The gzip-compressed CSV as shipped by scikit-learn (64 pixel columns, label last, no
/// header).
pub const DIGITS_CSV_GZ: &[u8] = include_bytes!("../data/digits.csv.gz");

/// Number of samples in [`digits`].
pub const DIGITS_LEN: usize = 1797;

/// The full digits set: 1,797 samples of shape `[1, 8, 8]`, pixel values `0..=16` divided
/// by 16 (so in `[0, 1]`), labels `0..=9`, named `"digits"`.
pub fn digits() -> Result<Dataset> {
    let csv = crate::bytes::maybe_gunzip(DIGITS_CSV_GZ.to_vec(), "digits.csv.gz (embedded)")?;
    parse_csv(
        &csv,
        "digits.csv.gz (embedded)",
        &CsvOptions {
            scale: PixelScale::Divide(16.0),
            shape: Some([1, 8, 8]),
            classes: Some(10),
            delimiter: b',',
            name: Some("digits".into()),
        },
    )
}

/// [`digits`] split into train and test sets with [`train_test_split`] (seeded shuffle;
/// the same `seed` gives the same split everywhere).
pub fn digits_split(test_fraction: f64, seed: u64) -> Result<Split> {
    train_test_split(&digits()?, test_fraction, seed)
}

/// The seed article's 48-input binary task, derived from an 8x8 digits set.
///
/// Inputs: the central 6 rows x 8 columns of each 8x8 image (rows 1..7, i.e. dropping the top
/// and bottom rows, which are almost always blank) = 48 values, shape `[1, 6, 8]`.
/// Label: 1 if the digit is below 5 (0-4), else 0; `classes = 2`.
///
/// `ds` must have shape `[1, 8, 8]` and digit labels (`0..=9`); the result is named
/// `"<name>-seed48"`.
pub fn seed_mlp_view(ds: &Dataset) -> Result<Dataset> {
    if ds.shape() != [1, 8, 8] {
        return Err(invalid(
            "seed_mlp_view",
            format!(
                "{} has sample shape {:?}; need [1, 8, 8]",
                ds.name(),
                ds.shape()
            ),
        ));
    }
    if let Some(&l) = ds.labels().iter().find(|&&l| l > 9) {
        return Err(invalid(
            "seed_mlp_view",
            format!("{} has label {l}; need digit labels 0..=9", ds.name()),
        ));
    }
    let mut images = Vec::with_capacity(ds.len() * 48);
    for img in ds.images().chunks_exact(64) {
        images.extend_from_slice(&img[8..56]); // rows 1..7 of 8 columns each
    }
    let labels = ds.labels().iter().map(|&l| u32::from(l < 5)).collect();
    Dataset::new(
        format!("{}-seed48", ds.name()),
        images,
        labels,
        [1, 6, 8],
        2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_view_shape_and_labels() {
        let d = digits().unwrap();
        let v = seed_mlp_view(&d).unwrap();
        assert_eq!((v.len(), v.sample_dims(), v.classes()), (DIGITS_LEN, 48, 2));
        assert_eq!(v.image(0).unwrap(), &d.image(0).unwrap()[8..56]);
        for i in 0..d.len() {
            assert_eq!(v.label(i), Some(u32::from(d.label(i).unwrap() < 5)));
        }
        // Digits 0-4 are 901 of 1797 (178+182+177+183+181).
        assert_eq!(v.label_histogram(), vec![896, 901]);
        assert!(seed_mlp_view(&v).is_err());
    }
}
