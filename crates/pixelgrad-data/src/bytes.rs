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

/// Returns `bytes` decompressed when they are gzip, unchanged otherwise. `file` names the
/// source in errors.
pub fn maybe_gunzip(bytes: Vec<u8>, file: &str) -> Result<Vec<u8>> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    // Multi-member decoder: `cat a.gz b.gz` is valid gzip and some tools write it.
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4));
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_end(&mut out)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                DataError::Truncated {
                    file: file.to_string(),
                    detail: format!(
                        "gzip stream ends early ({} compressed bytes, {} decompressed so far)",
                        bytes.len(),
                        out.len()
                    ),
                }
            } else {
                DataError::Corrupt {
                    file: file.to_string(),
                    detail: format!("bad gzip stream: {e}"),
                }
            }
        })?;
    Ok(out)
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
