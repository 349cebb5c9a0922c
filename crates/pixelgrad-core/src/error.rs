//! Typed errors. Every public call in pixelgrad returns [`Result`]; errors name the op, the
//! shapes involved and the backend, so a message is useful on its own (it is also what a
//! JavaScript caller sees in an `Error`).

use std::fmt;

/// The result type of every fallible pixelgrad call.
pub type Result<T> = std::result::Result<T, Error>;

/// Shapes printed as `[2, 3]`, several joined by `, `.
pub struct ShapeList<'a>(pub &'a [Vec<usize>]);

impl fmt::Display for ShapeList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{s:?}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Inputs of an op do not fit together (shapes, axes, arguments).
    #[error("{op}: {msg} (input shapes {}; backend {backend})", ShapeList(shapes))]
    Shape { op: &'static str, shapes: Vec<Vec<usize>>, backend: String, msg: String },

    /// A backend failed to run an op (kernel compile error, driver error...).
    #[error("{op} on {backend}: {msg}")]
    Backend { op: &'static str, backend: String, msg: String },

    /// A tensor or launch exceeds a measured device limit.
    #[error("{op} on {backend}: needs {requested} but the device limit {limit_name} is {limit}")]
    Limit { op: &'static str, backend: String, limit_name: &'static str, limit: u64, requested: u64 },

    /// A cap the caller chose (or its default) would be exceeded: elements in one result, work
    /// in one op or in one run ([`crate::budget`]). Refused before anything is allocated or
    /// launched; `raise` says which setting lifts it.
    #[error("{op} on {backend}: needs {requested} {what}, over the limit of {limit} (raise it with {raise})")]
    Budget { op: &'static str, backend: String, what: &'static str, requested: u64, limit: u64, raise: &'static str },

    /// A run was stopped through its [`crate::CancelToken`] (in JS, an `AbortSignal`).
    #[error("{op}: cancelled")]
    Cancelled { op: String },

    /// A backend cannot be used on this machine (no adapter, no float render target...).
    #[error("backend {backend} is not available: {reason}")]
    Unavailable { backend: String, reason: String },

    /// The GPU device was lost; every tensor on it is gone.
    #[error("backend {backend}: device lost: {reason}")]
    DeviceLost { backend: String, reason: String },

    /// A blocking call was made where only asynchronous ones work (e.g. a GPU read in wasm).
    #[error("{op} on {backend}: {msg}")]
    WouldBlock { op: &'static str, backend: String, msg: String },

    /// Tensors from two different backends were mixed in one op.
    #[error("{op}: inputs live on different backends ({a} and {b})")]
    BackendMismatch { op: &'static str, a: String, b: String },

    /// Autodiff misuse (backward from a non-scalar, nothing requires grad...).
    #[error("autodiff: {0}")]
    Autodiff(String),

    /// Bad data or model files, bad user arguments.
    #[error("{what}: {msg}")]
    Invalid { what: String, msg: String },

    /// File system errors, with the path.
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
}

impl Error {
    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(what: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Invalid { what: what.into(), msg: msg.into() }
    }

    /// Shorthand for [`Error::Backend`].
    pub fn backend(op: &'static str, backend: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Backend { op, backend: backend.into(), msg: msg.into() }
    }

    /// An [`std::io::Error`] with the path it happened on.
    pub fn io(path: impl AsRef<std::path::Path>, e: std::io::Error) -> Self {
        Error::Io { path: path.as_ref().display().to_string(), msg: e.to_string() }
    }

    /// Fills in the backend name of a shape error raised before the backend was known.
    pub fn with_backend(mut self, name: &str) -> Self {
        if let Error::Shape { backend, .. } = &mut self {
            if backend.is_empty() {
                *backend = name.to_string();
            }
        }
        self
    }
}
