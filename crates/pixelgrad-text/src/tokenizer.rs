//! The wrapper over `tokenizers::Tokenizer`: loading with typed errors, encode, checked decode.

use std::str::FromStr;

use crate::{Encoded, Error};

/// The model types of `tokenizer.json`'s `model.type` that the library builds.
const MODELS: [&str; 4] = ["BPE", "WordPiece", "WordLevel", "Unigram"];

/// A tokenizer loaded from a Hugging Face `tokenizer.json`.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer").field("vocab_size", &self.vocab_size()).finish()
    }
}

impl Tokenizer {
    /// Parses a `tokenizer.json`. Malformed JSON is [`Error::Json`] (with its line and column),
    /// a `model.type` the library lacks is [`Error::UnknownModel`], anything else it cannot
    /// build is [`Error::Invalid`] with the library's reason.
    pub fn from_json(json: &str) -> Result<Self, Error> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| Error::Json { line: e.line(), column: e.column(), message: e.to_string() })?;
        match value.get("model").and_then(|m| m.get("type")) {
            Some(serde_json::Value::String(t)) if !MODELS.contains(&t.as_str()) => {
                return Err(Error::UnknownModel { found: t.clone() });
            }
            Some(t) if !t.is_string() => return Err(Error::UnknownModel { found: t.to_string() }),
            _ => {}
        }
        let inner = tokenizers::Tokenizer::from_str(json).map_err(|e| Error::Invalid { message: e.to_string() })?;
        Ok(Self { inner })
    }

    /// Encodes `text`; `add_special` adds the post-processor's tokens (`[CLS]`, `[SEP]`, ...).
    /// Offsets are in characters, as the Python package gives them (see [`Encoded`]).
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Encoded, Error> {
        let enc = self.inner.encode_char_offsets(text, add_special).map_err(|e| Error::Encode { message: e.to_string() })?;
        Ok(Encoded { ids: enc.get_ids().to_vec(), tokens: enc.get_tokens().to_vec(), offsets: enc.get_offsets().to_vec() })
    }

    /// The text of `ids`; `skip_special` leaves out special tokens. Every id must name a token:
    /// the first that does not is [`Error::IdOutOfRange`] (the library itself would drop it).
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String, Error> {
        if let Some((index, &id)) = ids.iter().enumerate().find(|(_, &id)| self.inner.id_to_token(id).is_none()) {
            return Err(Error::IdOutOfRange { id, index, vocab_size: self.vocab_size() });
        }
        self.inner.decode(ids, skip_special).map_err(|e| Error::Decode { message: e.to_string() })
    }

    /// The number of tokens, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The id of `token` (a vocabulary or added token), or `None`.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The token of `id`, or `None` when no token has it.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }
}
