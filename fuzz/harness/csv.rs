// CSV image sets (one sample per line, label last), with the option combinations the CLI
// can pass.
//
// Shared by the cargo-fuzz target `fuzz/fuzz_targets/csv.rs` and the stable test that runs
// the seed corpus and regressions (`crates/pixelgrad-web/tests/fuzz_corpora.rs`): any panic
// is a bug.
use pixelgrad_data::{CsvOptions, PixelScale};

pub fn run(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else { return };
    let opts = CsvOptions {
        scale: match flags & 3 {
            0 => PixelScale::MaxFound,
            1 => PixelScale::Divide(255.0),
            2 => PixelScale::Divide(0.0),
            _ => PixelScale::Divide(1.0),
        },
        shape: if flags & 4 != 0 { Some([1, 2, 2]) } else { None },
        classes: if flags & 8 != 0 { Some(3) } else { None },
        delimiter: if flags & 16 != 0 { b';' } else { b',' },
        name: None,
    };
    if let Ok(ds) = pixelgrad_data::parse_csv(rest, "fuzz.csv", &opts) {
        assert_eq!(ds.images().len(), ds.len() * ds.sample_dims());
        let _ = pixelgrad_data::train_test_split(&ds, 0.2, 1);
    }
}
