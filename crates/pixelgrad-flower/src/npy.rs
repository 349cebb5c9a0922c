//! `.npy` bytes, the serialisation Flower's `Array` uses (`stype = "numpy.ndarray"`, written by
//! `np.save(..., allow_pickle=False)`).
//!
//! Writing follows NumPy's format 1.0 byte for byte: magic `\x93NUMPY`, version `1 0`, a
//! little-endian u16 header length, then the header dict
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (784, 256), }`, 21 minus the digits of
//! the first dimension spaces of growth room, spaces to align the data on 64 bytes, and `\n`.
//! Reading accepts format versions 1-3, C order, and `<f4` (kept) or `<f8` (narrowed to f32,
//! the dtype of every pixelgrad parameter; the caller is told through [`NdArray::dtype`]).

use crate::{FlowerError, Result};

/// The `stype` Flower writes for NumPy-serialised arrays.
pub const STYPE_NUMPY: &str = "numpy.ndarray";

const MAGIC: &[u8] = b"\x93NUMPY";
const ALIGN: usize = 64;
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// A host array of f32 values in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct NdArray {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    /// The dtype it was read as (`float32` or `float64`); `float32` for arrays made here.
    pub dtype: &'static str,
}

impl NdArray {
    /// An f32 array; `data.len()` must equal the product of `shape`.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Self> {
        let n: usize = shape.iter().product();
        if n != data.len() {
            return Err(FlowerError::Invalid(format!(
                "{} values do not fill shape {shape:?}",
                data.len()
            )));
        }
        Ok(NdArray {
            shape,
            data,
            dtype: "float32",
        })
    }
}

fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [] => "()".into(),
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The `np.save` header (format 1.0) of an array of `descr` and `shape`, for `data_len` bytes.
fn header(descr: &str, shape: &[usize], data_len: usize) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_repr(shape)
    );
    if let Some(first) = shape.first() {
        header
            .push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(first.to_string().len())));
    }
    // magic (6) + version (2) + u16 length (2) + header + '\n', padded to a multiple of 64.
    let hlen = header.len() + 1;
    let pad = ALIGN - ((MAGIC.len() + 2 + 2 + hlen) % ALIGN);
    let total_header = hlen + pad;
    let mut out = Vec::with_capacity(10 + total_header + data_len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(total_header as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

/// `np.save` bytes of an f32 array (dtype `<f4`, C order).
pub fn encode_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    let mut out = header("<f4", shape, data.len() * 4);
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// `np.save` bytes of an int64 array (dtype `<i8`, C order): SecAgg+'s masked vectors.
pub fn encode_i64(shape: &[usize], data: &[i64]) -> Vec<u8> {
    let mut out = header("<i8", shape, data.len() * 8);
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn bad(msg: impl Into<String>) -> FlowerError {
    FlowerError::Protocol(format!("npy array: {}", msg.into()))
}

/// The value of `'key': ...` in a header dict, up to the next top-level comma or brace.
fn field<'a>(header: &'a str, key: &str) -> Result<&'a str> {
    let pat = format!("'{key}':");
    let start = header
        .find(&pat)
        .ok_or_else(|| bad(format!("header has no '{key}'")))?
        + pat.len();
    let rest = header[start..].trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')
            .map(|i| i + 1)
            .ok_or_else(|| bad("unterminated shape"))?
    } else {
        rest.find([',', '}'])
            .ok_or_else(|| bad(format!("unterminated '{key}'")))?
    };
    Ok(rest[..end].trim())
}

fn parse_shape(s: &str) -> Result<Vec<usize>> {
    let inner = s
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| bad(format!("shape '{s}' is not a tuple")))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.parse::<usize>()
                .map_err(|_| bad(format!("shape '{s}' has a non-integer dimension")))
        })
        .collect()
}

/// The dtype, shape and data bytes of `np.save` bytes (format 1-3, C order, whole elements).
fn parse(bytes: &[u8]) -> Result<(&str, Vec<usize>, &[u8])> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("missing the \\x93NUMPY magic (not an np.save buffer)"));
    }
    let (hlen, hstart): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(format!("unsupported format version {v}"))),
    };
    let hend = hstart
        .checked_add(hlen)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad("header runs past the end"))?;
    let header =
        std::str::from_utf8(&bytes[hstart..hend]).map_err(|_| bad("header is not text"))?;
    let descr = field(header, "descr")?.trim_matches(['\'', '"']);
    if field(header, "fortran_order")? != "False" {
        return Err(bad("Fortran-ordered arrays are not supported"));
    }
    let shape = parse_shape(field(header, "shape")?)?;
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("shape overflows"))?;
    let body = &bytes[hend..];
    let width = match descr {
        "<f4" => 4,
        "<f8" | "<i8" => 8,
        other => {
            return Err(bad(format!(
                "dtype '{other}' is not supported (float32, float64 or int64 little-endian)"
            )))
        }
    };
    if n.checked_mul(width) != Some(body.len()) {
        return Err(bad(format!(
            "{} data bytes for {n} elements of {descr} (shape {shape:?})",
            body.len()
        )));
    }
    Ok((descr, shape, body))
}

/// The element count an `np.save` buffer declares, from its header alone (to weigh an array
/// against a limit before decoding it).
pub fn declared_elements(bytes: &[u8]) -> Result<u64> {
    let (_, shape, _) = parse(bytes)?;
    Ok(shape.iter().map(|&d| d as u64).product())
}

/// Parses `np.save` bytes of a little-endian float32 or float64 array in C order.
pub fn decode(bytes: &[u8]) -> Result<NdArray> {
    let (descr, shape, body) = parse(bytes)?;
    let (data, dtype) = match descr {
        "<f4" => (
            body.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            "float32",
        ),
        "<f8" => (
            body.chunks_exact(8)
                .map(|c| {
                    f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32
                })
                .collect(),
            "float64",
        ),
        other => {
            return Err(bad(format!(
                "dtype '{other}' is not supported here (float32 or float64 little-endian)"
            )))
        }
    };
    Ok(NdArray { shape, data, dtype })
}

/// Parses `np.save` bytes of a little-endian int64 array in C order: (shape, values).
pub fn decode_i64(bytes: &[u8]) -> Result<(Vec<usize>, Vec<i64>)> {
    let (descr, shape, body) = parse(bytes)?;
    if descr != "<i8" {
        return Err(bad(format!("dtype '{descr}' where int64 was expected")));
    }
    let v = body
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    Ok((shape, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_alignment() {
        for shape in [
            vec![],
            vec![3],
            vec![2, 3],
            vec![784, 256],
            vec![1, 2, 3, 4],
        ] {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 1.0).collect();
            let b = encode_f32(&shape, &data);
            assert_eq!(
                (b.len() - n * 4) % 64,
                0,
                "data aligned on 64 bytes for {shape:?}"
            );
            let a = decode(&b).unwrap();
            assert_eq!(a.shape, shape);
            assert_eq!(a.data, data);
        }
    }

    #[test]
    fn known_header() {
        let b = encode_f32(&[2, 3], &[0.0; 6]);
        let h = std::str::from_utf8(&b[10..b.len() - 24]).unwrap();
        assert!(
            h.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            "{h:?}"
        );
        assert!(h.ends_with('\n'));
    }

    #[test]
    fn rejects_bad_buffers() {
        assert!(decode(b"hello").is_err());
        let mut b = encode_f32(&[4], &[1.0; 4]);
        b.truncate(b.len() - 1);
        assert!(decode(&b).unwrap_err().to_string().contains("data bytes"));
        let mut b = encode_f32(&[4], &[1.0; 4]);
        let i = b.windows(3).position(|w| w == b"<f4").unwrap();
        b[i + 1] = b'i';
        assert!(decode(&b)
            .unwrap_err()
            .to_string()
            .contains("not supported"));
    }
}
