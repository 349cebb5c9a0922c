//! CSV image sets: one sample per line, pixel values then the label in the last column.
//!
//! This is the layout of the Kaggle MNIST CSVs (with the label moved last), scikit-learn's
//! `digits.csv.gz` and most "export your drawings" tools. A first line that does not parse as
//! numbers is taken as a header and skipped (so a first *data* line with a typo is skipped
//! too; every later line is checked strictly). The file may be gzip or plain text (detected
//! from the bytes).

use std::path::Path;

use crate::bytes::read_maybe_gz;
use crate::dataset::Dataset;
use crate::error::{display_name, invalid, DataError, Result};

/// How raw CSV values become pixel values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PixelScale {
    /// Divide by the largest value in the file, so pixels end in `[0, 1]` when the data is
    /// non-negative (a file of all zeros is left as is).
    MaxFound,
    /// Divide every value by this number (`255.0` for bytes, `16.0` for the digits set,
    /// `1.0` to keep values unchanged). Must be finite and positive.
    Divide(f32),
}

/// Options for [`load_csv`].
#[derive(Debug, Clone, PartialEq)]
pub struct CsvOptions {
    /// Pixel scaling; default [`PixelScale::MaxFound`].
    pub scale: PixelScale,
    /// Sample shape `[c, h, w]`; `None` infers `[1, s, s]` when the pixel count is a square
    /// `s * s`, else `[1, 1, count]`.
    pub shape: Option<[usize; 3]>,
    /// Number of classes; `None` uses the largest label + 1.
    pub classes: Option<usize>,
    /// Field separator; default `b','`.
    pub delimiter: u8,
    /// Data set name; `None` uses the file name without `.csv` / `.gz`.
    pub name: Option<String>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            scale: PixelScale::MaxFound,
            shape: None,
            classes: None,
            delimiter: b',',
            name: None,
        }
    }
}

/// Loads a CSV image set (gzip or plain) from `path`; see the module docs for the layout.
/// Errors name the file, the 1-based line and the 1-based column.
pub fn load_csv(path: impl AsRef<Path>, opts: &CsvOptions) -> Result<Dataset> {
    let path = path.as_ref();
    let bytes = read_maybe_gz(path)?;
    parse_csv(&bytes, &display_name(path), opts)
}

/// Parses uncompressed CSV bytes; `file` names the source in errors and, when
/// `opts.name` is `None`, gives the data set its name.
pub fn parse_csv(bytes: &[u8], file: &str, opts: &CsvOptions) -> Result<Dataset> {
    let text = std::str::from_utf8(bytes).map_err(|e| DataError::Corrupt {
        file: file.into(),
        detail: format!("not UTF-8 text (byte {})", e.valid_up_to()),
    })?;
    if let PixelScale::Divide(s) = opts.scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(invalid(
                "load_csv",
                format!("{file}: pixel scale {s} must be finite and > 0"),
            ));
        }
    }
    let delim = char::from(opts.delimiter);
    let csv_err = |line: usize, column: usize, detail: String| DataError::Csv {
        file: file.into(),
        line,
        column,
        detail,
    };

    let mut pixels: Vec<f32> = Vec::new();
    let mut labels: Vec<u32> = Vec::new();
    let mut columns: Option<(usize, usize)> = None; // (count, line it was set on)
    let mut seen_first = false;
    for (idx, raw_line) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        let line = raw_line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(delim).map(str::trim).collect();
        if !seen_first {
            seen_first = true;
            // A header is a first line with any non-numeric field ("pixel0,...,label").
            if fields.iter().any(|f| f.parse::<f64>().is_err()) {
                continue;
            }
        }
        let (count, set_on) = *columns.get_or_insert((fields.len(), line_no));
        if count < 2 {
            return Err(csv_err(
                line_no,
                1,
                format!("{count} column(s); need at least one pixel and the label"),
            ));
        }
        if fields.len() != count {
            return Err(csv_err(
                line_no,
                fields.len().min(count) + 1,
                format!(
                    "expected {count} columns (as on line {set_on}), found {}",
                    fields.len()
                ),
            ));
        }
        for (col, f) in fields[..count - 1].iter().enumerate() {
            let v: f32 = f.parse().map_err(|_| {
                csv_err(line_no, col + 1, format!("cannot parse {f:?} as a number"))
            })?;
            if !v.is_finite() {
                return Err(csv_err(
                    line_no,
                    col + 1,
                    format!("pixel value {f:?} is not finite"),
                ));
            }
            pixels.push(v);
        }
        let lf = fields[count - 1];
        labels.push(parse_label(lf).ok_or_else(|| {
            csv_err(
                line_no,
                count,
                format!("label {lf:?} is not a non-negative whole number"),
            )
        })?);
        if let Some(classes) = opts.classes {
            let l = labels[labels.len() - 1];
            if l as usize >= classes {
                return Err(csv_err(
                    line_no,
                    count,
                    format!("label {l} is not below classes = {classes}"),
                ));
            }
        }
    }
    let Some((count, _)) = columns else {
        return Err(DataError::Corrupt {
            file: file.into(),
            detail: "no data rows".into(),
        });
    };
    let dims = count - 1;

    let divisor = match opts.scale {
        PixelScale::Divide(s) => s,
        PixelScale::MaxFound => {
            let m = pixels.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            if m > 0.0 {
                m
            } else {
                1.0
            }
        }
    };
    if divisor != 1.0 {
        let inv = 1.0 / divisor;
        pixels.iter_mut().for_each(|v| *v *= inv);
    }

    let shape = match opts.shape {
        Some(s) => {
            if s.iter().product::<usize>() != dims {
                return Err(invalid(
                    "load_csv",
                    format!(
                        "{file}: shape {s:?} holds {} values but rows have {dims} pixels",
                        s.iter().product::<usize>()
                    ),
                ));
            }
            s
        }
        None => infer_shape(dims),
    };
    let classes = opts
        .classes
        .unwrap_or_else(|| labels.iter().copied().max().map_or(1, |m| m as usize + 1));
    let name = opts.name.clone().unwrap_or_else(|| stem(file));
    Dataset::new(name, pixels, labels, shape, classes)
}

/// `[1, s, s]` for a square pixel count, else a `[1, 1, n]` row.
fn infer_shape(dims: usize) -> [usize; 3] {
    let s = (dims as f64).sqrt().round() as usize;
    if s * s == dims {
        [1, s, s]
    } else {
        [1, 1, dims]
    }
}

/// Accepts "7" and "7.0" (float CSV exports), rejects "-1", "7.5", "x".
fn parse_label(f: &str) -> Option<u32> {
    if let Ok(v) = f.parse::<u32>() {
        return Some(v);
    }
    let v: f64 = f.parse().ok()?;
    (v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX)).then_some(v as u32)
}

/// "digits.csv.gz" -> "digits".
fn stem(file: &str) -> String {
    let f = file.strip_suffix(".gz").unwrap_or(file);
    f.strip_suffix(".csv").unwrap_or(f).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_skipped_and_shape_inferred() {
        let text = "p0,p1,p2,p3,label\n0,1,2,4,1\n4,2,0,0,0\n";
        let d = parse_csv(text.as_bytes(), "t.csv", &CsvOptions::default()).unwrap();
        assert_eq!(d.shape(), [1, 2, 2]);
        assert_eq!(d.labels(), &[1, 0]);
        assert_eq!(d.classes(), 2);
        assert_eq!(d.name(), "t");
        assert_eq!(d.image(0).unwrap(), &[0.0, 0.25, 0.5, 1.0]);
    }

    #[test]
    fn non_square_is_a_row_and_scale_given() {
        let d = parse_csv(
            b"10,20,30,2.0\r\n",
            "r.csv",
            &CsvOptions {
                scale: PixelScale::Divide(10.0),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(d.shape(), [1, 1, 3]);
        assert_eq!(d.images(), &[1.0, 2.0, 3.0]);
        assert_eq!(d.labels(), &[2]);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse_csv(b"1,2,3\n4,x,6\n", "a.csv", &CsvOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.csv: line 2, column 2: cannot parse \"x\" as a number"
        );
        let e = parse_csv(b"1,2,3\n\n4,5\n", "a.csv", &CsvOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.csv: line 3, column 3: expected 3 columns (as on line 1), found 2"
        );
        let e = parse_csv(b"1,2,3.5\n", "a.csv", &CsvOptions::default()).unwrap_err();
        assert!(
            e.to_string().contains("line 1, column 3: label \"3.5\""),
            "{e}"
        );
        let e = parse_csv(b"a,b\n", "a.csv", &CsvOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "a.csv: corrupt: no data rows");
    }
}
