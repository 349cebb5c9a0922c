//! pixelgrad-text: Hugging Face `tokenizer.json` files (WordPiece, BPE, Unigram and WordLevel
//! models, with their normalizers, pre-tokenizers, post-processors and decoders) loaded with the
//! `tokenizers` crate, natively and in wasm (`pg.tokenizer(json)` in the npm package).
//!
//! ```
//! # let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/wordpiece.json")).unwrap();
//! use pixelgrad_text::Tokenizer;
//! let tok = Tokenizer::from_json(&json)?;
//! let enc = tok.encode("The cat sat.", true)?;
//! assert_eq!(enc.ids.len(), enc.offsets.len());
//! let text = tok.decode(&enc.ids, true)?;
//! assert_eq!(text, "the cat sat.");
//! # Ok::<(), pixelgrad_text::Error>(())
//! ```
//!
//! Every failure is an [`Error`]: malformed JSON, an unknown model type, a file the library
//! cannot read, an id outside the vocabulary (which the `tokenizers` crate's own `decode` would
//! skip without a word). Nothing here panics on input.

mod encoded;
mod error;
mod ids;
mod tokenizer;

pub use encoded::Encoded;
pub use error::Error;
pub use ids::ids_from_numbers;
pub use tokenizer::Tokenizer;
