//! The one error type of the crate: every public call returns it instead of panicking.

/// What went wrong talking to a SuperLink or running an instruction.
#[derive(Debug, thiserror::Error)]
pub enum FlowerError {
    /// The SuperLink could not be reached at all (connection refused, DNS, reset).
    #[error("cannot reach the SuperLink at {url}: {msg}")]
    Unreachable { url: String, msg: String },
    /// No complete answer within the transport's time limit (a stalled or trickling server).
    #[error("the SuperLink at {url} did not answer {path} within {seconds} s (raise the node's timeout if it is just slow)")]
    Timeout {
        url: String,
        path: String,
        seconds: f64,
    },
    /// The TLS handshake failed: the server's certificate does not verify against the trusted
    /// roots (`--root-certificates`, or the built-in Mozilla roots), or TLS itself failed.
    #[error("TLS with the SuperLink at {url} failed: {msg}")]
    Tls { url: String, msg: String },
    /// The SuperLink does not accept this node's key: node authentication is on and the key is
    /// not registered (or was unregistered).
    #[error("the SuperLink at {url} refused this node: {msg}")]
    NotRegistered { url: String, msg: String },
    /// The SuperLink answered with an HTTP error status.
    #[error("SuperLink answered {status} to {path}: {msg}")]
    Http {
        path: String,
        status: u16,
        /// Flower's API error code from the body, when it has one.
        code: Option<i64>,
        msg: String,
    },
    /// A message, object or header that does not follow Flower's format or version.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server asked for more than this node allows (bytes, objects, array elements, local
    /// epochs, rounds): refused before the work or the allocation. `what` names the quantity
    /// and the option that raises the limit.
    #[error("refused: {what} is {found}, over this node's limit of {limit}")]
    Limit {
        what: String,
        found: u64,
        limit: u64,
    },
    /// A training round this node refuses because its privacy budget would be exceeded (the
    /// limit is the node's own; the server cannot raise it).
    #[error("privacy budget: this round would take epsilon from {epsilon:.4} to {next:.4}, past this node's maximum of {max} (delta {delta:e}); it trains no further rounds")]
    Budget {
        epsilon: f64,
        next: f64,
        max: f64,
        delta: f64,
    },
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

    pub(crate) fn limit(what: impl Into<String>, found: u64, limit: u64) -> FlowerError {
        FlowerError::Limit {
            what: what.into(),
            found,
            limit,
        }
    }

    /// A short machine-readable name of the variant (the browser package's error `kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            FlowerError::Unreachable { .. } => "unreachable",
            FlowerError::Timeout { .. } => "timeout",
            FlowerError::Tls { .. } => "tls",
            FlowerError::NotRegistered { .. } => "notRegistered",
            FlowerError::Http { .. } => "http",
            FlowerError::Protocol(_) => "protocol",
            FlowerError::Limit { .. } => "limit",
            FlowerError::Budget { .. } => "privacyBudget",
            FlowerError::Mismatch(_) => "mismatch",
            FlowerError::Invalid(_) => "invalid",
            FlowerError::Engine { .. } => "engine",
            FlowerError::Stopped => "cancelled",
        }
    }
}
