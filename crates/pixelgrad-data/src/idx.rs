//! IDX files, the format MNIST (and Fashion-MNIST, KMNIST, EMNIST) ship in.
//!
//! Layout (all integers big-endian): two zero bytes, a type byte (`0x08` = unsigned byte,
//! the only type these sets use), a dimension count, one `u32` per dimension, then the data
//! row-major. Images are `0x00000803` (`[n, rows, cols]`), labels `0x00000801` (`[n]`).
//! Files may be gzip-compressed or raw; the loader looks at the bytes, not the name. A gzip
//! stream is inflated to the size its IDX header declares and no further
//! ([`crate::maybe_gunzip_idx`]).

use std::path::Path;

use crate::bytes::read_maybe_gz_idx;
use crate::dataset::{Dataset, Split};
use crate::error::{display_name, DataError, Result};

/// Magic number of an IDX file of unsigned bytes with 3 dimensions (images).
pub const IDX_IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX file of unsigned bytes with 1 dimension (labels).
pub const IDX_LABELS_MAGIC: u32 = 0x0000_0801;

/// Images read from an IDX file, pixels scaled from `0..=255` to `[0, 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct IdxImages {
    /// `[n, rows, cols]` row-major, each value `byte / 255`.
    pub pixels: Vec<f32>,
    /// Number of images.
    pub n: usize,
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
}

/// Reads an IDX image file (`*-idx3-ubyte`, gzip or raw).
pub fn read_idx_images(path: impl AsRef<Path>) -> Result<IdxImages> {
    let path = path.as_ref();
    parse_idx_images(&read_maybe_gz_idx(path)?, &display_name(path))
}

/// Reads an IDX label file (`*-idx1-ubyte`, gzip or raw).
pub fn read_idx_labels(path: impl AsRef<Path>) -> Result<Vec<u32>> {
    let path = path.as_ref();
    parse_idx_labels(&read_maybe_gz_idx(path)?, &display_name(path))
}

/// Parses uncompressed IDX image bytes; `file` names the source in errors.
pub fn parse_idx_images(bytes: &[u8], file: &str) -> Result<IdxImages> {
    let dims = parse_header(bytes, file, IDX_IMAGES_MAGIC)?;
    let (n, rows, cols) = (dims[0], dims[1], dims[2]);
    if rows == 0 || cols == 0 {
        return Err(DataError::Corrupt {
            file: file.into(),
            detail: format!("header says images of {rows}x{cols}"),
        });
    }
    let data = &bytes[16..];
    // Checked: on wasm32 `usize` is 32 bits and a corrupt header can overflow it.
    let sizes = rows
        .checked_mul(cols)
        .and_then(|per| Some((per, n.checked_mul(per)?)));
    let (per, need) = sizes.ok_or_else(|| DataError::Corrupt {
        file: file.into(),
        detail: format!("header says {n} images of {rows}x{cols}, too large to address"),
    })?;
    check_len(file, data.len(), need, || {
        format!(
            "header says {n} images of {rows}x{cols} ({need} pixel bytes), file has {} pixel bytes ({} whole images)",
            data.len(),
            data.len() / per
        )
    })?;
    Ok(IdxImages {
        pixels: data.iter().map(|&b| f32::from(b) / 255.0).collect(),
        n,
        rows,
        cols,
    })
}

/// Parses uncompressed IDX label bytes; `file` names the source in errors.
pub fn parse_idx_labels(bytes: &[u8], file: &str) -> Result<Vec<u32>> {
    let dims = parse_header(bytes, file, IDX_LABELS_MAGIC)?;
    let n = dims[0];
    let data = &bytes[8..];
    check_len(file, data.len(), n, || {
        format!("header says {n} labels, file has {}", data.len())
    })?;
    Ok(data.iter().map(|&b| u32::from(b)).collect())
}

/// Compares the payload length with what the header announced.
fn check_len(file: &str, have: usize, need: usize, short: impl FnOnce() -> String) -> Result<()> {
    if have < need {
        return Err(DataError::Truncated {
            file: file.into(),
            detail: short(),
        });
    }
    if have > need {
        return Err(DataError::Corrupt {
            file: file.into(),
            detail: format!(
                "{} bytes after the {need} data bytes the header announces",
                have - need
            ),
        });
    }
    Ok(())
}

/// Checks the magic number against `expected` and returns the dimensions.
fn parse_header(bytes: &[u8], file: &str, expected: u32) -> Result<Vec<usize>> {
    let ndims = (expected & 0xff) as usize;
    let header_len = 4 + 4 * ndims;
    if bytes.len() < 4 {
        return Err(DataError::Truncated {
            file: file.into(),
            detail: format!(
                "file has {} bytes, an IDX header needs {header_len}",
                bytes.len()
            ),
        });
    }
    let magic = be_u32(&bytes[0..4]);
    if magic != expected {
        return Err(DataError::BadMagic {
            file: file.into(),
            found: magic,
            expected,
            detail: describe_magic(magic, expected),
        });
    }
    if bytes.len() < header_len {
        return Err(DataError::Truncated {
            file: file.into(),
            detail: format!(
                "file has {} bytes, the IDX header needs {header_len}",
                bytes.len()
            ),
        });
    }
    Ok((0..ndims)
        .map(|d| be_u32(&bytes[4 + 4 * d..8 + 4 * d]) as usize)
        .collect())
}

/// Explains a wrong magic number in words, so the user learns what they passed instead.
fn describe_magic(found: u32, expected: u32) -> String {
    let want = if expected == IDX_IMAGES_MAGIC {
        "images"
    } else {
        "labels"
    };
    if found >> 16 != 0 {
        return format!("not an IDX file; expected IDX {want}");
    }
    let ty = (found >> 8) & 0xff;
    let nd = found & 0xff;
    if ty != 0x08 {
        return format!(
            "IDX data type 0x{ty:02x} is not unsigned byte (0x08), the only type supported"
        );
    }
    match nd {
        1 => format!("this is an IDX label file (1 dimension); expected IDX {want}"),
        3 => format!("this is an IDX image file (3 dimensions); expected IDX {want}"),
        _ => format!("IDX file with {nd} dimensions; expected IDX {want}"),
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The four file names `load_idx_dir` looks for (each with or without `.gz`).
pub const IDX_FILE_NAMES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// Loads an MNIST-layout folder: `train-images-idx3-ubyte[.gz]`,
/// `train-labels-idx1-ubyte[.gz]`, `t10k-images-idx3-ubyte[.gz]` and
/// `t10k-labels-idx1-ubyte[.gz]` (the `.gz` name is tried first; either name may hold gzip
/// or raw bytes). Image and label counts must agree, and train and test images must have the
/// same size. Samples have shape `[1, rows, cols]`; `classes` is the largest label + 1 over
/// both halves. The sets are named `<folder>-train` and `<folder>-test`.
pub fn load_idx_dir(dir: impl AsRef<Path>) -> Result<Split> {
    let dir = dir.as_ref();
    if !dir.is_dir() {
        return Err(DataError::NotFound {
            file: dir.display().to_string(),
            detail: "no such folder; expected a folder with MNIST IDX files".into(),
        });
    }
    let find = |base: &str| -> Result<std::path::PathBuf> {
        for cand in [format!("{base}.gz"), base.to_string()] {
            let p = dir.join(&cand);
            if p.is_file() {
                return Ok(p);
            }
        }
        Err(DataError::NotFound {
            file: dir.join(format!("{base}[.gz]")).display().to_string(),
            detail: format!("load_idx_dir needs {}[.gz]", IDX_FILE_NAMES.join("[.gz], ")),
        })
    };
    let paths: Vec<_> = IDX_FILE_NAMES
        .iter()
        .map(|b| find(b))
        .collect::<Result<_>>()?;
    let name = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "idx".into());

    let train_x = read_idx_images(&paths[0])?;
    let train_y = read_idx_labels(&paths[1])?;
    let test_x = read_idx_images(&paths[2])?;
    let test_y = read_idx_labels(&paths[3])?;
    for (x, y, px, py) in [
        (&train_x, &train_y, &paths[0], &paths[1]),
        (&test_x, &test_y, &paths[2], &paths[3]),
    ] {
        if x.n != y.len() {
            return Err(DataError::Mismatch {
                what: format!("{} vs {}", display_name(px), display_name(py)),
                detail: format!("{} images but {} labels", x.n, y.len()),
            });
        }
    }
    if (train_x.rows, train_x.cols) != (test_x.rows, test_x.cols) {
        return Err(DataError::Mismatch {
            what: format!("{} vs {}", display_name(&paths[0]), display_name(&paths[2])),
            detail: format!(
                "train images are {}x{}, test images are {}x{}",
                train_x.rows, train_x.cols, test_x.rows, test_x.cols
            ),
        });
    }
    let classes = train_y
        .iter()
        .chain(test_y.iter())
        .copied()
        .max()
        .map_or(1, |m| m as usize + 1);
    let shape = [1, train_x.rows, train_x.cols];
    Ok(Split {
        train: Dataset::from_parts_unchecked(
            format!("{name}-train"),
            train_x.pixels,
            train_y,
            shape,
            classes,
        ),
        test: Dataset::from_parts_unchecked(
            format!("{name}-test"),
            test_x.pixels,
            test_y,
            shape,
            classes,
        ),
    })
}

/// Encodes images (`0..=255` bytes) as IDX bytes; the inverse of [`parse_idx_images`]. Used
/// by tests and handy for writing small fixtures.
pub fn encode_idx_images(pixels: &[u8], n: usize, rows: usize, cols: usize) -> Result<Vec<u8>> {
    if pixels.len() != n * rows * cols {
        return Err(crate::error::invalid(
            "encode_idx_images",
            format!("{} bytes for {n} images of {rows}x{cols}", pixels.len()),
        ));
    }
    let mut out = Vec::with_capacity(16 + pixels.len());
    out.extend_from_slice(&IDX_IMAGES_MAGIC.to_be_bytes());
    for d in [n, rows, cols] {
        out.extend_from_slice(&dim_u32("encode_idx_images", d)?.to_be_bytes());
    }
    out.extend_from_slice(pixels);
    Ok(out)
}

/// Encodes labels (each below 256) as IDX bytes; the inverse of [`parse_idx_labels`].
pub fn encode_idx_labels(labels: &[u32]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(8 + labels.len());
    out.extend_from_slice(&IDX_LABELS_MAGIC.to_be_bytes());
    out.extend_from_slice(&dim_u32("encode_idx_labels", labels.len())?.to_be_bytes());
    for &l in labels {
        let b = u8::try_from(l).map_err(|_| {
            crate::error::invalid(
                "encode_idx_labels",
                format!("label {l} does not fit a byte"),
            )
        })?;
        out.push(b);
    }
    Ok(out)
}

fn dim_u32(func: &'static str, d: usize) -> Result<u32> {
    u32::try_from(d).map_err(|_| crate::error::invalid(func, format!("dimension {d} exceeds u32")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_memory() {
        let px: Vec<u8> = (0..2 * 3 * 2).map(|v| (v * 20) as u8).collect();
        let img = parse_idx_images(&encode_idx_images(&px, 2, 3, 2).unwrap(), "f").unwrap();
        assert_eq!((img.n, img.rows, img.cols), (2, 3, 2));
        assert_eq!(img.pixels[1], 20.0 / 255.0);
        let lab = parse_idx_labels(&encode_idx_labels(&[3, 9]).unwrap(), "f").unwrap();
        assert_eq!(lab, vec![3, 9]);
    }

    #[test]
    fn labels_given_to_image_reader() {
        let bytes = encode_idx_labels(&[1, 2]).unwrap();
        let msg = parse_idx_images(&bytes, "a").unwrap_err().to_string();
        assert!(msg.contains("bad magic number 0x00000801"), "{msg}");
        assert!(msg.contains("IDX label file"), "{msg}");
    }

    #[test]
    fn trailing_bytes_are_corrupt() {
        let mut bytes = encode_idx_labels(&[1, 2]).unwrap();
        bytes.push(0);
        let msg = parse_idx_labels(&bytes, "a").unwrap_err().to_string();
        assert!(msg.contains("corrupt: 1 bytes after"), "{msg}");
    }
}
