//! The one error type of the crate: every public call returns it instead of panicking.

/// What went wrong talking to a SuperLink or running an instruction.
#[derive(Debug, thiserror::Error)]
pub enum FlowerError {
    /// The SuperLink could not be reached at all (connection refused, DNS, timeout).
    #[error("cannot reach the SuperLink at {url}: {msg}")]
    Unreachable { url: String, msg: String },
    /// The SuperLink answered with an HTTP error status.
    #[error("SuperLink answered {status} to {path}: {msg}")]
    Http {
        path: String,
        status: u16,
        msg: String,
    },
    /// A message, object or header that does not follow Flower's format or version.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Parameters from the server that do not fit the local model (names, count or shapes).
    #[error("parameters do not match the local model: {0}")]
    Mismatch(String),
    /// A bad argument or option given by the caller.
    #[error("{0}")]
    Invalid(String),
    /// Local training, evaluation or device work failed.
    #[error("local {op} failed: {source}")]
    Engine {
        op: &'static str,
        #[source]
        source: pixelgrad_core::Error,
    },
    /// The caller stopped the node.
    #[error("stopped")]
    Stopped,
}

pub type Result<T> = std::result::Result<T, FlowerError>;

impl FlowerError {
    pub(crate) fn engine(op: &'static str) -> impl FnOnce(pixelgrad_core::Error) -> FlowerError {
        move |source| FlowerError::Engine { op, source }
    }
}
