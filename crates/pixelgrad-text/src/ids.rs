//! Token ids from JavaScript numbers, refused (not truncated or wrapped) when they are not ids.

use crate::Error;

/// `values` as token ids: each must be a whole number from 0 to `u32::MAX`; the first that is
/// not (negative, fractional, NaN, too large) is an [`Error::NotAnId`] naming its index.
pub fn ids_from_numbers(values: &[f64]) -> Result<Vec<u32>, Error> {
    values
        .iter()
        .enumerate()
        .map(|(index, &value)| {
            if value.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&value) {
                Ok(value as u32)
            } else {
                Err(Error::NotAnId { index, value })
            }
        })
        .collect()
}
