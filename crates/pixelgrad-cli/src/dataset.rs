//! `--dataset digits | idx:DIR | csv:PATH`, loaded into train and test splits.

use std::path::PathBuf;

use pixelgrad::data::{self, Dataset};

use crate::{CliResult, Context};

/// The fraction of the digits / CSV sets held out for testing.
pub const TEST_FRACTION: f64 = 0.2;

pub enum DatasetSpec {
    Digits,
    Idx(PathBuf),
    Csv(PathBuf),
}

impl DatasetSpec {
    pub fn parse(s: &str) -> CliResult<Self> {
        if s == "digits" {
            Ok(DatasetSpec::Digits)
        } else if let Some(dir) = s.strip_prefix("idx:") {
            Ok(DatasetSpec::Idx(PathBuf::from(dir)))
        } else if let Some(p) = s.strip_prefix("csv:") {
            Ok(DatasetSpec::Csv(PathBuf::from(p)))
        } else {
            Err(format!("unknown dataset '{s}' (digits, idx:DIR, csv:PATH)"))
        }
    }
}

/// Train and test sets as the model sees them.
pub struct Loaded {
    pub name: String,
    pub train: Dataset,
    pub test: Dataset,
}

impl Loaded {
    pub fn shape(&self) -> [usize; 3] {
        self.train.shape()
    }
    pub fn classes(&self) -> usize {
        self.train.classes().max(self.test.classes())
    }
}

/// Loads `spec`; with `seed_view` (the seed network), maps 8x8 digits to its 48-input binary task.
pub fn load(spec: &DatasetSpec, seed_view: bool, seed: u64) -> CliResult<Loaded> {
    let (name, split) = match spec {
        DatasetSpec::Digits => ("digits (embedded, UCI 8x8, CC BY 4.0)".to_string(), data::digits_split(TEST_FRACTION, seed).ctx()?),
        DatasetSpec::Idx(dir) => (format!("idx:{}", dir.display()), data::load_idx_dir(dir).ctx()?),
        DatasetSpec::Csv(p) => {
            let ds = data::load_csv(p, &data::CsvOptions::default()).ctx()?;
            (format!("csv:{}", p.display()), data::train_test_split(&ds, TEST_FRACTION, seed).ctx()?)
        }
    };
    let (mut train, mut test) = (split.train, split.test);
    if seed_view {
        if train.shape() != [1, 8, 8] {
            return Err(format!(
                "seed-mlp takes the 8x8 digits layout (48 = rows 1..7 of 8x8); this data set has samples of shape {:?}",
                train.shape()
            ));
        }
        train = data::seed_mlp_view(&train).ctx()?;
        test = data::seed_mlp_view(&test).ctx()?;
    }
    if train.is_empty() || test.is_empty() {
        return Err(format!("{name}: the train or test split is empty"));
    }
    Ok(Loaded { name, train, test })
}
