//! Mini-batches: gathers the samples of an index order into contiguous buffers ready to
//! upload as a `[batch, c, h, w]` tensor plus its labels.

use std::borrow::Cow;

use crate::dataset::Dataset;
use crate::error::{invalid, Result};

/// Iterator over `(images, labels)` batches of a [`Dataset`] in a given index order.
///
/// `images` is `[b, c, h, w]` row-major (`b * ds.sample_dims()` values) and `labels` has `b`
/// entries, where `b` is the batch size except possibly for the last batch. The last, partial
/// batch is yielded unless [`Batches::drop_last`] is set (useful when a traced training step
/// has a fixed batch size).
#[derive(Debug, Clone)]
pub struct Batches<'a> {
    ds: &'a Dataset,
    order: Cow<'a, [usize]>,
    batch_size: usize,
    pos: usize,
    drop_last: bool,
}

impl<'a> Batches<'a> {
    /// Batches over `order` (any indices into `ds`, e.g. from [`crate::shuffled_indices`]).
    /// Fails when `batch_size` is 0 or an index is out of range, so iterating cannot fail.
    pub fn new(ds: &'a Dataset, order: &'a [usize], batch_size: usize) -> Result<Self> {
        Self::build(ds, Cow::Borrowed(order), batch_size)
    }

    /// Batches over `order`, taking ownership of it.
    pub fn from_order(ds: &'a Dataset, order: Vec<usize>, batch_size: usize) -> Result<Self> {
        Self::build(ds, Cow::Owned(order), batch_size)
    }

    /// Batches in storage order `0..n` (for evaluation).
    pub fn sequential(ds: &'a Dataset, batch_size: usize) -> Result<Self> {
        Self::build(ds, Cow::Owned((0..ds.len()).collect()), batch_size)
    }

    fn build(ds: &'a Dataset, order: Cow<'a, [usize]>, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(invalid("Batches::new", "batch_size must be at least 1"));
        }
        if let Some(&bad) = order.iter().find(|&&i| i >= ds.len()) {
            return Err(invalid(
                "Batches::new",
                format!(
                    "index {bad} out of range for {} ({} samples)",
                    ds.name(),
                    ds.len()
                ),
            ));
        }
        Ok(Self {
            ds,
            order,
            batch_size,
            pos: 0,
            drop_last: false,
        })
    }

    /// When `true`, a final batch smaller than the batch size is skipped.
    pub fn drop_last(mut self, drop: bool) -> Self {
        self.drop_last = drop;
        self
    }

    /// The batch size.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Batches left to yield.
    pub fn num_batches(&self) -> usize {
        let left = self.order.len() - self.pos;
        if self.drop_last {
            left / self.batch_size
        } else {
            left.div_ceil(self.batch_size)
        }
    }
}

impl Iterator for Batches<'_> {
    type Item = (Vec<f32>, Vec<u32>);

    fn next(&mut self) -> Option<Self::Item> {
        let left = self.order.len() - self.pos;
        if left == 0 || (self.drop_last && left < self.batch_size) {
            return None;
        }
        let take = left.min(self.batch_size);
        let idx = &self.order[self.pos..self.pos + take];
        self.pos += take;
        let d = self.ds.sample_dims();
        let (images, labels) = (self.ds.images(), self.ds.labels());
        let mut x = Vec::with_capacity(take * d);
        let mut y = Vec::with_capacity(take);
        for &i in idx {
            // In range: checked in `build`.
            x.extend_from_slice(&images[i * d..(i + 1) * d]);
            y.push(labels[i]);
        }
        Some((x, y))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.num_batches();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Batches<'_> {}

impl Dataset {
    /// Shorthand for [`Batches::new`].
    pub fn batches<'a>(&'a self, order: &'a [usize], batch_size: usize) -> Result<Batches<'a>> {
        Batches::new(self, order, batch_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(n: usize) -> Dataset {
        let images = (0..n * 2).map(|v| v as f32).collect();
        let labels = (0..n as u32).map(|v| v % 3).collect();
        Dataset::new("b", images, labels, [1, 1, 2], 3).unwrap()
    }

    #[test]
    fn partial_last_batch_kept_or_dropped() {
        let d = ds(10);
        let order: Vec<usize> = (0..10).rev().collect();
        let b: Vec<_> = d.batches(&order, 4).unwrap().collect();
        assert_eq!(
            b.iter().map(|(_, y)| y.len()).collect::<Vec<_>>(),
            vec![4, 4, 2]
        );
        assert_eq!(b[0].0[..2], [18.0, 19.0]); // sample 9 first
        let b = Batches::new(&d, &order, 4).unwrap().drop_last(true);
        assert_eq!(b.len(), 2);
        assert_eq!(b.count(), 2);
    }

    #[test]
    fn bad_arguments() {
        let d = ds(3);
        assert!(Batches::new(&d, &[0, 3], 2)
            .unwrap_err()
            .to_string()
            .contains("index 3"));
        assert!(Batches::sequential(&d, 0).is_err());
    }
}
