//! [`Dataset`]: images as one flat `Vec<f32>` plus one `u32` label per image.

use crate::error::{invalid, Result};

/// A labelled image set held in memory.
///
/// `images` is row-major `[n, c, h, w]`: sample `i` occupies
/// `images[i * sample_dims() .. (i + 1) * sample_dims()]`. Labels are class indices in
/// `0..classes`. The invariants (lengths agree, labels in range) are checked by
/// [`Dataset::new`] and kept by every method, which is why the fields are private.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    images: Vec<f32>,
    labels: Vec<u32>,
    n: usize,
    shape: [usize; 3],
    classes: usize,
    name: String,
}

/// A train / test pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Samples to fit on.
    pub train: Dataset,
    /// Held-out samples to evaluate on.
    pub test: Dataset,
}

impl Dataset {
    /// Builds a data set, checking that `images.len() == labels.len() * c * h * w`, that no
    /// dimension is zero, and that every label is below `classes`.
    pub fn new(
        name: impl Into<String>,
        images: Vec<f32>,
        labels: Vec<u32>,
        shape: [usize; 3],
        classes: usize,
    ) -> Result<Self> {
        let name = name.into();
        if shape.contains(&0) {
            return Err(invalid(
                "Dataset::new",
                format!("{name}: sample shape {shape:?} has a zero dimension"),
            ));
        }
        let dims = shape[0]
            .checked_mul(shape[1])
            .and_then(|v| v.checked_mul(shape[2]))
            .ok_or_else(|| invalid("Dataset::new", format!("{name}: shape {shape:?} overflows")))?;
        let n = labels.len();
        if n.checked_mul(dims) != Some(images.len()) {
            return Err(invalid(
                "Dataset::new",
                format!(
                    "{name}: {} pixel values for {n} labels of shape {shape:?} (expected {})",
                    images.len(),
                    n.saturating_mul(dims)
                ),
            ));
        }
        if let Some((i, &l)) = labels
            .iter()
            .enumerate()
            .find(|(_, &l)| l as usize >= classes)
        {
            return Err(invalid(
                "Dataset::new",
                format!("{name}: label {l} of sample {i} is not below classes = {classes}"),
            ));
        }
        Ok(Self {
            images,
            labels,
            n,
            shape,
            classes,
            name,
        })
    }

    /// All pixels, `[n, c, h, w]` row-major.
    pub fn images(&self) -> &[f32] {
        &self.images
    }

    /// All labels, one per sample.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Number of samples (same as [`Dataset::len`]; named after the field).
    pub fn n(&self) -> usize {
        self.n
    }

    /// True when the set holds no samples.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Sample shape `[channels, height, width]`.
    pub fn shape(&self) -> [usize; 3] {
        self.shape
    }

    /// Number of classes; labels are in `0..classes`.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// Human-readable name ("digits", "mnist-train", a file stem...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the set (builder style).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Values per sample, `c * h * w`: the input width of a dense first layer.
    pub fn sample_dims(&self) -> usize {
        self.shape[0] * self.shape[1] * self.shape[2]
    }

    /// Pixels of sample `i`, or `None` past the end.
    pub fn image(&self, i: usize) -> Option<&[f32]> {
        let d = self.sample_dims();
        self.images
            .get(i.checked_mul(d)?..i.checked_add(1)?.checked_mul(d)?)
    }

    /// Label of sample `i`, or `None` past the end.
    pub fn label(&self, i: usize) -> Option<u32> {
        self.labels.get(i).copied()
    }

    /// How many samples each class has (`classes` entries).
    pub fn label_histogram(&self) -> Vec<usize> {
        let mut h = vec![0usize; self.classes];
        for &l in &self.labels {
            // In range by construction.
            h[l as usize] += 1;
        }
        h
    }

    /// The samples at `indices`, in that order (repeats allowed), as a new set with the
    /// same shape and classes.
    pub fn subset(&self, indices: &[usize], name: impl Into<String>) -> Result<Dataset> {
        let d = self.sample_dims();
        let mut images = Vec::with_capacity(indices.len() * d);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            if i >= self.n {
                return Err(invalid(
                    "Dataset::subset",
                    format!(
                        "index {i} out of range for {} ({} samples)",
                        self.name, self.n
                    ),
                ));
            }
            images.extend_from_slice(&self.images[i * d..(i + 1) * d]);
            labels.push(self.labels[i]);
        }
        Ok(Dataset {
            images,
            labels,
            n: indices.len(),
            shape: self.shape,
            classes: self.classes,
            name: name.into(),
        })
    }

    /// Mutable pixels, for in-place preprocessing. The length cannot change, so the
    /// invariants hold.
    pub fn images_mut(&mut self) -> &mut [f32] {
        &mut self.images
    }

    /// Takes the set apart: `(images, labels, shape, classes, name)`.
    pub fn into_parts(self) -> (Vec<f32>, Vec<u32>, [usize; 3], usize, String) {
        (
            self.images,
            self.labels,
            self.shape,
            self.classes,
            self.name,
        )
    }

    /// Internal constructor for callers that already hold the invariants.
    pub(crate) fn from_parts_unchecked(
        name: String,
        images: Vec<f32>,
        labels: Vec<u32>,
        shape: [usize; 3],
        classes: usize,
    ) -> Self {
        let n = labels.len();
        debug_assert_eq!(images.len(), n * shape.iter().product::<usize>());
        Self {
            images,
            labels,
            n,
            shape,
            classes,
            name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Dataset {
        Dataset::new(
            "t",
            (0..12).map(|v| v as f32).collect(),
            vec![0, 1, 2],
            [1, 2, 2],
            3,
        )
        .unwrap()
    }

    #[test]
    fn accessors() {
        let d = tiny();
        assert_eq!(d.len(), 3);
        assert_eq!(d.sample_dims(), 4);
        assert_eq!(d.image(1).unwrap(), &[4.0, 5.0, 6.0, 7.0]);
        assert_eq!(d.image(3), None);
        assert_eq!(d.label(2), Some(2));
        assert_eq!(d.label_histogram(), vec![1, 1, 1]);
    }

    #[test]
    fn new_rejects_bad_lengths_and_labels() {
        let e = Dataset::new("x", vec![0.0; 5], vec![0], [1, 2, 2], 2).unwrap_err();
        assert!(e.to_string().contains("5 pixel values for 1 labels"), "{e}");
        let e = Dataset::new("x", vec![0.0; 4], vec![7], [1, 2, 2], 2).unwrap_err();
        assert!(e.to_string().contains("label 7 of sample 0"), "{e}");
    }

    #[test]
    fn subset_picks_rows() {
        let d = tiny().subset(&[2, 0], "s").unwrap();
        assert_eq!(d.labels(), &[2, 0]);
        assert_eq!(d.image(0).unwrap(), &[8.0, 9.0, 10.0, 11.0]);
        assert!(tiny().subset(&[3], "s").is_err());
    }
}
