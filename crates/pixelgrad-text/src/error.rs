//! The typed failures of loading, encoding and decoding.

/// What went wrong; each message starts with the operation (`tokenizer`, `tokenizer.encode`,
/// `tokenizer.decode`) so the JavaScript error's `op` names it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not JSON at all (or is cut short).
    #[error("tokenizer: the tokenizer.json is not valid JSON (line {line}, column {column}): {message}")]
    Json { line: usize, column: usize, message: String },
    /// `model.type` names a model the library does not have.
    #[error("tokenizer: unknown model type {found:?} (known: BPE, WordPiece, WordLevel, Unigram)")]
    UnknownModel { found: String },
    /// Valid JSON, known model, but not a tokenizer the library can build (a missing field, a
    /// vocabulary of the wrong shape, an unknown normalizer, ...).
    #[error("tokenizer: not a usable tokenizer.json: {message}")]
    Invalid { message: String },
    /// The library refused to encode the text.
    #[error("tokenizer.encode: {message}")]
    Encode { message: String },
    /// An id passed to `decode` that names no token (neither vocabulary nor added token).
    #[error("tokenizer.decode: id {id} (at index {index}) is not in the vocabulary of {vocab_size} tokens")]
    IdOutOfRange { id: u32, index: usize, vocab_size: usize },
    /// A number passed as an id that is not a whole number in 0..2^32 (from JavaScript arrays).
    #[error("tokenizer.decode: ids[{index}] = {value} is not a token id (a whole number from 0 to 4294967295)")]
    NotAnId { index: usize, value: f64 },
    /// The library refused to decode the ids.
    #[error("tokenizer.decode: {message}")]
    Decode { message: String },
}
