//! Typed errors of ONNX import, execution and export. Each names what a user needs to fix the
//! problem: the node (name, operator, opset), the input (name, expected shape), the attribute.

use pixelgrad_core::Error as CoreError;

pub type Result<T> = std::result::Result<T, OnnxError>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OnnxError {
    /// The bytes are not an ONNX model (truncated, another format, bad protobuf).
    #[error("not a valid ONNX model: {0}")]
    Parse(String),

    /// A `.npy` file that cannot be read.
    #[error("{0}")]
    Npy(String),

    /// The model is well formed but uses something pixelgrad does not read (external data,
    /// sparse initializers, a newer IR, sequence types...).
    #[error("unsupported ONNX model: {0}")]
    UnsupportedModel(String),

    /// An operator pixelgrad does not implement.
    #[error("unsupported operator {op_type} (node '{node}', domain '{domain}', opset {opset})")]
    UnsupportedOp { op_type: String, node: String, domain: String, opset: i64 },

    /// A node attribute or argument value pixelgrad does not implement, or an invalid one.
    #[error("{op_type} node '{node}' (opset {opset}): {msg}")]
    Node { op_type: String, node: String, opset: i64, msg: String },

    /// A tensor element type pixelgrad cannot hold (strings, complex numbers, float64 on a
    /// device...).
    #[error("{what}: unsupported element type {dtype}")]
    Dtype { what: String, dtype: String },

    /// A caller's input does not fit the model: wrong name, dtype or shape.
    #[error("input '{name}': {msg}")]
    Input { name: String, msg: String },

    /// A named output that the graph does not have.
    #[error("output '{name}': {msg}")]
    Output { name: String, msg: String },

    /// A pixelgrad model that cannot be written as ONNX.
    #[error("export: {0}")]
    Export(String),

    /// An engine error (backend failure, shapes that do not fit) while running a node.
    #[error("{context}: {source}")]
    Engine { context: String, source: CoreError },

    /// An engine error outside any node (uploading inputs, reading outputs).
    #[error(transparent)]
    Core(#[from] CoreError),

    /// File system errors, with the path.
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
}

impl OnnxError {
    /// The engine error inside, if this is one (`Engine` or `Core`): what a caller matches
    /// to tell a refused budget (`pixelgrad_core::Error::Budget`) or a cancelled run
    /// (`pixelgrad_core::Error::Cancelled`) from a bad model, e.g. to give JS errors their
    /// `kind`.
    pub fn core(&self) -> Option<&CoreError> {
        match self {
            OnnxError::Engine { source, .. } | OnnxError::Core(source) => Some(source),
            _ => None,
        }
    }

    pub(crate) fn io(path: &std::path::Path, e: std::io::Error) -> Self {
        OnnxError::Io { path: path.display().to_string(), msg: e.to_string() }
    }
}

/// Where ONNX errors must become engine errors (inside [`pixelgrad_nn::Module::forward`]), they
/// keep their full message as an [`CoreError::Invalid`] (or the engine error they wrap).
impl From<OnnxError> for CoreError {
    fn from(e: OnnxError) -> Self {
        match e {
            OnnxError::Core(c) => c,
            other => CoreError::invalid("onnx", other.to_string()),
        }
    }
}
