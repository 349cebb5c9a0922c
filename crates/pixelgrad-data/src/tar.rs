//! A minimal reader for (uncompressed) tar archives, enough for npm tarballs: ustar headers,
//! the ustar name prefix, GNU long names (`L`) and pax `path=` records. Only regular files are
//! returned; links, folders and device entries are skipped.

use crate::error::{DataError, Result};

const BLOCK: usize = 512;

/// One regular file from an archive.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TarEntry {
    pub path: String,
    pub data: Vec<u8>,
}

/// Lists the regular files of a tar archive. `file` names the archive in errors.
pub(crate) fn read_tar(bytes: &[u8], file: &str) -> Result<Vec<TarEntry>> {
    let corrupt = |detail: String| DataError::Corrupt {
        file: file.into(),
        detail,
    };
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut long_name: Option<String> = None;
    while pos + BLOCK <= bytes.len() {
        let h = &bytes[pos..pos + BLOCK];
        if h.iter().all(|&b| b == 0) {
            break; // end-of-archive marker
        }
        let size = parse_size(&h[124..136])
            .ok_or_else(|| corrupt(format!("tar header at byte {pos}: bad size field")))?;
        let data_start = pos + BLOCK;
        let data_end = data_start
            .checked_add(size)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| DataError::Truncated {
                file: file.into(),
                detail: format!("tar entry at byte {pos} announces {size} bytes past the end"),
            })?;
        let data = &bytes[data_start..data_end];
        let typeflag = h[156];
        match typeflag {
            b'L' => long_name = Some(cstr(data)),
            b'x' => long_name = pax_path(data).or(long_name),
            b'0' | 0 => {
                let path = long_name.take().unwrap_or_else(|| header_name(h));
                out.push(TarEntry {
                    path,
                    data: data.to_vec(),
                });
            }
            _ => long_name = None,
        }
        pos = data_start + size.div_ceil(BLOCK) * BLOCK;
    }
    Ok(out)
}

/// Name from a header: ustar `prefix/name` when the prefix is set.
fn header_name(h: &[u8]) -> String {
    let name = cstr(&h[0..100]);
    let ustar = &h[257..262] == b"ustar";
    let prefix = if ustar {
        cstr(&h[345..500])
    } else {
        String::new()
    };
    if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    }
}

/// Bytes up to the first NUL, as (lossy) UTF-8.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Octal ASCII size, or GNU base-256 when the top bit of the first byte is set.
fn parse_size(f: &[u8]) -> Option<usize> {
    if f[0] & 0x80 != 0 {
        let mut v: u64 = u64::from(f[0] & 0x7f);
        for &b in &f[1..] {
            v = v.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return usize::try_from(v).ok();
    }
    let s = cstr(f);
    let s = s.trim();
    if s.is_empty() {
        return Some(0);
    }
    usize::from_str_radix(s, 8).ok()
}

/// The `path` value of a pax extended header ("<len> path=<value>\n" records).
fn pax_path(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    text.lines().find_map(|rec| {
        let (_, kv) = rec.split_once(' ')?;
        kv.strip_prefix("path=").map(str::to_string)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes a ustar archive of regular files (test fixture builder).
    pub(crate) fn write_tar(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in files {
            let mut h = [0u8; BLOCK];
            h[..name.len()].copy_from_slice(name.as_bytes());
            h[100..107].copy_from_slice(b"0000644");
            h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
            h[156] = b'0';
            h[257..263].copy_from_slice(b"ustar\0");
            h[148..156].copy_from_slice(b"        ");
            let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
            h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
            out.extend_from_slice(&h);
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(BLOCK) * BLOCK, 0);
        }
        out.resize(out.len() + 2 * BLOCK, 0);
        out
    }

    #[test]
    fn reads_files_back() {
        let big: Vec<u8> = (0..1300u32).map(|v| v as u8).collect();
        let t = write_tar(&[("package/a.txt", b"hello"), ("package/data/b", &big)]);
        let e = read_tar(&t, "t.tar").unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].path, "package/a.txt");
        assert_eq!(e[0].data, b"hello");
        assert_eq!(e[1].data, big);
        let cut = &t[..1024 + 512 + 100]; // inside the second entry's data
        assert!(read_tar(cut, "t.tar")
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }
}
