//! NumPy `.npy` files (format versions 1-3, little-endian, C order): float32, float16, int64,
//! int32, uint8 and bool read into a [`HostTensor`] of that element type; the same types written.

use crate::host::{checked_numel, DType, Data, HostTensor};
use crate::{OnnxError, Result};

const MAGIC: &[u8] = b"\x93NUMPY";

fn bad(msg: impl Into<String>) -> OnnxError {
    OnnxError::Npy(format!("npy: {}", msg.into()))
}

/// Decodes `.npy` bytes. Every length and size read from the file is checked before it is
/// used (a header length past the end, a shape whose product overflows, a data size that does
/// not match), so a malformed file is an error, never a panic or a wrapped size.
pub fn read(bytes: &[u8]) -> Result<HostTensor> {
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err(bad("not a .npy file (bad magic)"));
    }
    // the header length: 2 bytes in version 1, 4 in versions 2 and 3
    let (hlen, start) = match bytes.get(6).copied() {
        Some(1) => (bytes.get(8..10).and_then(|b| b.try_into().ok()).map(|b| u16::from_le_bytes(b) as usize), 10),
        Some(2 | 3) => (bytes.get(8..12).and_then(|b| b.try_into().ok()).map(|b| u32::from_le_bytes(b) as usize), 12),
        v => return Err(bad(format!("format version {} is not supported", v.unwrap_or(0)))),
    };
    let hlen = hlen.ok_or_else(|| bad("truncated header"))?;
    let end = usize::checked_add(start, hlen).ok_or_else(|| bad("truncated header"))?;
    let header = bytes.get(start..end).ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("header is not text"))?;
    let descr = field(header, "descr").ok_or_else(|| bad("header has no 'descr'"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let fortran = field(header, "fortran_order").ok_or_else(|| bad("header has no 'fortran_order'"))?;
    if fortran.trim() != "False" {
        return Err(bad("Fortran-order arrays are not supported (save with np.ascontiguousarray)"));
    }
    let shape_txt = shape_field(header).ok_or_else(|| bad("header has no 'shape' tuple"))?;
    let shape: Vec<usize> = shape_txt
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad(format!("bad shape '({shape_txt})'"))))
        .collect::<Result<_>>()?;
    let n = checked_numel(&shape).ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
    let data = bytes.get(end..).unwrap_or_default();
    let (dtype, size) = match descr {
        "<f4" => (DType::F32, 4),
        "<f2" => (DType::F16, 2),
        "<i8" => (DType::I64, 8),
        "<i4" => (DType::I32, 4),
        "|u1" | "<u1" => (DType::U8, 1),
        "|i1" | "<i1" => (DType::I8, 1),
        "|b1" => (DType::Bool, 1),
        other => {
            return Err(bad(format!(
                "element type '{other}' is not supported (float32, float16, int64, int32, uint8, int8, bool; little-endian)"
            )))
        }
    };
    if n.checked_mul(size) != Some(data.len()) {
        let want = n.checked_mul(size).map_or_else(|| "more than fit in memory".to_string(), |b| b.to_string());
        return Err(bad(format!("{} data bytes for shape {shape:?} of {dtype} ({want} expected)", data.len())));
    }
    let d = match dtype {
        DType::F32 => Data::F32(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        DType::F16 => Data::F32(data.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
        DType::I64 => {
            Data::I64(data.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect())
        }
        DType::I32 => Data::I64(data.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
        DType::I8 => Data::I64(data.iter().map(|&b| b as i8 as i64).collect()),
        _ => Data::I64(data.iter().map(|&b| b as i64).collect()),
    };
    Ok(HostTensor { dtype, shape, data: d })
}

/// Reads a `.npy` file.
pub fn load(path: &std::path::Path) -> Result<HostTensor> {
    let b = std::fs::read(path).map_err(|e| OnnxError::io(path, e))?;
    read(&b).map_err(|e| match e {
        OnnxError::Npy(m) => OnnxError::Npy(format!("{}: {m}", path.display())),
        o => o,
    })
}

/// The value text of `'key': value` in a header dict (up to the next comma at depth 0).
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let k = header.find(&format!("'{key}'"))?;
    let rest = header.get(k + key.len() + 2..)?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest.find(',').unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// The text inside the parentheses of `'shape': (...)`.
fn shape_field(header: &str) -> Option<&str> {
    let k = header.find("'shape'")?;
    let rest = header.get(k + "'shape'".len()..)?.trim_start().strip_prefix(':')?.trim_start();
    let inner = rest.strip_prefix('(')?;
    Some(&inner[..inner.find(')')?])
}

/// Encodes a tensor as `.npy` (version 1.0).
pub fn write(t: &HostTensor) -> Result<Vec<u8>> {
    let descr = match t.dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I64 => "<i8",
        DType::I32 => "<i4",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::Bool => "|b1",
        other => return Err(OnnxError::Dtype { what: "npy output".into(), dtype: other.name().into() }),
    };
    let shape = match t.shape.len() {
        0 => String::new(),
        1 => format!("{},", t.shape[0]),
        _ => t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({shape}), }}");
    // magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + t.numel() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    match (&t.data, t.dtype) {
        (Data::F32(v), DType::F16) => v.iter().for_each(|&x| out.extend_from_slice(&half::f16::from_f32(x).to_le_bytes())),
        (Data::F32(v), _) => v.iter().for_each(|&x| out.extend_from_slice(&x.to_le_bytes())),
        (Data::I64(v), DType::I64) => v.iter().for_each(|&x| out.extend_from_slice(&x.to_le_bytes())),
        (Data::I64(v), DType::I32) => v.iter().for_each(|&x| out.extend_from_slice(&(x as i32).to_le_bytes())),
        (Data::I64(v), _) => v.iter().for_each(|&x| out.push(x as u8)),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_type() {
        let cases = [
            HostTensor::f32(vec![2, 3], vec![1.0, -2.5, 3.25, 0.0, 1e-3, 7.0]),
            HostTensor { dtype: DType::F16, shape: vec![3], data: Data::F32(vec![0.5, -1.0, 2048.0]) },
            HostTensor::i64(vec![2], vec![-7, 1 << 40]),
            HostTensor::ints(DType::U8, vec![1, 2, 2], vec![0, 1, 254, 255]),
            HostTensor::f32(vec![], vec![4.0]),
        ];
        for t in cases {
            let b = write(&t).unwrap();
            assert_eq!((b[8] as usize + 10) % 64, 0, "header alignment");
            assert_eq!(read(&b).unwrap(), t);
        }
    }

    #[test]
    fn refuses_bad_files() {
        assert!(read(b"PK\x03\x04 not npy").is_err());
        let mut b = write(&HostTensor::f32(vec![4], vec![1.0; 4])).unwrap();
        b.truncate(b.len() - 3);
        assert!(matches!(read(&b), Err(OnnxError::Npy(m)) if m.contains("data bytes")));
        let be = b"\x93NUMPY\x01\x00\x46\x00{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }                           \n";
        assert!(matches!(read(be), Err(OnnxError::Npy(m)) if m.contains("'>f8'")));
    }

    fn with_header(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend([version, 0]);
        if version == 1 {
            b.extend((header.len() as u16).to_le_bytes());
        } else {
            b.extend((header.len() as u32).to_le_bytes());
        }
        b.extend(header.as_bytes());
        b.extend(data);
        b
    }

    /// Malformed header and shape fields are errors, not panics (issue 38: a `)` before the
    /// `(` sliced backwards) or wrapped sizes.
    #[test]
    fn malformed_headers_and_shapes_are_errors() {
        let h = |shape: &str| format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        for (what, bytes) in [
            ("paren order", with_header(1, &h(")1, 2("), &[0; 8])),
            ("no tuple", with_header(1, &h("4"), &[0; 16])),
            ("not a number", with_header(1, &h("(2, x)"), &[0; 8])),
            ("negative", with_header(1, &h("(-1,)"), &[0; 4])),
            ("product overflows", with_header(1, &h("(4294967296, 4294967296, 4)"), &[0; 4])),
            ("bytes overflow", with_header(1, &h("(4611686018427387905,)"), &[0; 4])),
            ("zero hides an overflow", with_header(1, &h("(0, 4294967296, 4294967296)"), &[])),
            ("header past the end", with_header(2, &h("(1,)"), &[0; 4])[..20].to_vec()),
            ("huge header length", [MAGIC, &[3, 0, 0xff, 0xff, 0xff, 0xff]].concat()),
            ("truncated length", [MAGIC, &[2, 0, 1, 0]].concat()),
            ("no shape key", with_header(1, "{'descr': '<f4', 'fortran_order': False, }", &[0; 4])),
            ("shape key last", with_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape'", &[0; 4])),
            (
                "zero bytes set to 0xff",
                with_header(1, "{'descr': '\u{0}', 'shape': (1,)}", &[0; 4]).into_iter().map(|b| if b == 0 { 0xff } else { b }).collect(),
            ),
        ] {
            let r = std::panic::catch_unwind(|| read(&bytes)).unwrap_or_else(|_| panic!("{what}: panicked"));
            assert!(matches!(r, Err(OnnxError::Npy(_))), "{what}: {r:?}");
        }
        // version 2 headers read as version 1 ones
        let t = read(&with_header(2, &h("(2,)"), &[0, 0, 128, 63, 0, 0, 0, 64])).unwrap();
        assert_eq!((t.shape.clone(), t.to_f32()), (vec![2], vec![1.0, 2.0]));
    }
}
