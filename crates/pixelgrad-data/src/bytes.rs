//! Reading a file whole, gunzipping it when its first bytes are the gzip magic number.
//!
//! Compression is detected from the content, never from the file name: a `.gz` file that was
//! already decompressed by a browser or a download tool still loads.

use std::io::Read;
use std::path::Path;

use crate::error::{io_err, DataError, Result};

/// The two bytes every gzip member starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// True when `bytes` starts with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[..2] == GZIP_MAGIC
}

/// Reads `path` and returns its content, decompressed when it is gzip.
pub fn read_maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| io_err(path, e))?;
    maybe_gunzip(raw, &crate::error::display_name(path))
}

/// Most bytes a gzip stream is inflated to (1 GiB), whatever the file: a few kilobytes of gzip
/// can expand a thousandfold, and a crafted stream of concatenated members without end. Readers
/// that know the size to expect (IDX: [`maybe_gunzip_idx`]) cap it lower.
pub const MAX_GUNZIP_BYTES: u64 = 1 << 30;

/// Returns `bytes` decompressed when they are gzip, unchanged otherwise; at most
/// [`MAX_GUNZIP_BYTES`] (else [`DataError::TooLarge`]). `file` names the source in errors.
pub fn maybe_gunzip(bytes: Vec<u8>, file: &str) -> Result<Vec<u8>> {
    maybe_gunzip_limited(bytes, file, MAX_GUNZIP_BYTES)
}

/// [`maybe_gunzip`] that stops, with [`DataError::TooLarge`], as soon as the output would pass
/// `limit` bytes (never more than [`MAX_GUNZIP_BYTES`]): at most `limit + 1` bytes are inflated.
pub fn maybe_gunzip_limited(bytes: Vec<u8>, file: &str, limit: u64) -> Result<Vec<u8>> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let limit = limit.min(MAX_GUNZIP_BYTES);
    // Multi-member decoder: `cat a.gz b.gz` is valid gzip and some tools write it.
    let start = (bytes.len().saturating_mul(4) as u64).min(limit) as usize;
    let mut out = Vec::with_capacity(start);
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| gzip_error(e, file, bytes.len(), out.len()))?;
    if out.len() as u64 > limit {
        return Err(DataError::TooLarge {
            file: file.to_string(),
            limit,
            detail: format!("gzip stream inflates to more than {limit} bytes ({} compressed)", bytes.len()),
        });
    }
    Ok(out)
}

/// The first `n` decompressed bytes of gzip `bytes` (fewer when the stream is shorter), for
/// reading a header before deciding how much to inflate.
pub fn gunzip_prefix(bytes: &[u8], file: &str, n: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    flate2::read::MultiGzDecoder::new(bytes)
        .take(n as u64)
        .read_to_end(&mut out)
        .map_err(|e| gzip_error(e, file, bytes.len(), out.len()))?;
    Ok(out)
}

fn gzip_error(e: std::io::Error, file: &str, compressed: usize, so_far: usize) -> DataError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        DataError::Truncated {
            file: file.to_string(),
            detail: format!("gzip stream ends early ({compressed} compressed bytes, {so_far} decompressed so far)"),
        }
    } else {
        DataError::Corrupt {
            file: file.to_string(),
            detail: format!("bad gzip stream: {e}"),
        }
    }
}

/// Bytes of one element of an IDX type byte (`0x08` unsigned byte ... `0x0E` double).
fn idx_element_bytes(type_byte: u8) -> Option<u64> {
    match type_byte {
        0x08 | 0x09 => Some(1),
        0x0B => Some(2),
        0x0C | 0x0D => Some(4),
        0x0E => Some(8),
        _ => None,
    }
}

/// [`maybe_gunzip`] for an IDX file: the header is inflated first, and the stream may then
/// inflate to exactly the size the header declares (header plus the product of its dimensions
/// times the element size) and not a byte more ([`DataError::TooLarge`] otherwise, and when
/// the declared size passes [`MAX_GUNZIP_BYTES`]). A header that is not IDX leaves the absolute
/// ceiling, and the IDX parser then says what is wrong. Raw bytes are returned unchanged.
pub fn maybe_gunzip_idx(bytes: Vec<u8>, file: &str) -> Result<Vec<u8>> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let magic = gunzip_prefix(&bytes, file, 4)?;
    let (Some(elem), Some(&ndims)) = (magic.get(2).copied().and_then(idx_element_bytes), magic.get(3)) else {
        return maybe_gunzip(bytes, file);
    };
    if magic[..2] != [0, 0] {
        return maybe_gunzip(bytes, file);
    }
    let header_len = 4 + 4 * ndims as usize;
    let header = gunzip_prefix(&bytes, file, header_len)?;
    if header.len() < header_len {
        // short: the parser reports the truncated header
        return Ok(header);
    }
    let declared = header[4..]
        .chunks_exact(4)
        .try_fold(elem, |acc, d| acc.checked_mul(u64::from(u32::from_be_bytes([d[0], d[1], d[2], d[3]]))))
        .and_then(|data| data.checked_add(header_len as u64));
    match declared {
        Some(n) if n <= MAX_GUNZIP_BYTES => maybe_gunzip_limited(bytes, file, n).map_err(|e| match e {
            DataError::TooLarge { file, limit, .. } => DataError::TooLarge {
                file,
                limit,
                detail: format!("gzip stream inflates to more than the {limit} bytes its IDX header declares"),
            },
            other => other,
        }),
        _ => Err(DataError::TooLarge {
            file: file.to_string(),
            limit: MAX_GUNZIP_BYTES,
            detail: format!(
                "the IDX header declares {} bytes, more than the {MAX_GUNZIP_BYTES} a gzip stream may inflate to",
                declared.map_or_else(|| "over 2^64".to_string(), |n| n.to_string())
            ),
        }),
    }
}

/// Reads `path` and returns its content, decompressed when it is gzip, with the IDX header's
/// size as the cap ([`maybe_gunzip_idx`]).
pub fn read_maybe_gz_idx(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| io_err(path, e))?;
    maybe_gunzip_idx(raw, &crate::error::display_name(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn passes_raw_and_inflates_gzip() {
        let data = b"hello hello hello".to_vec();
        assert_eq!(maybe_gunzip(data.clone(), "f").unwrap(), data);
        assert_eq!(maybe_gunzip(gz(&data), "f").unwrap(), data);
    }

    #[test]
    fn truncated_gzip_is_an_error() {
        let data: Vec<u8> = (0..5000u32).map(|v| (v * 7919 % 251) as u8).collect();
        let z = gz(&data);
        let e = maybe_gunzip(z[..z.len() / 2].to_vec(), "x.gz").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("x.gz: "), "{msg}");
        assert!(
            msg.contains("truncated") || msg.contains("corrupt"),
            "{msg}"
        );
    }
}
