//! `pg.tokenizer(json)`: a Hugging Face tokenizer.json (WordPiece, BPE, Unigram) through
//! pixelgrad-text. `web/js/tokenizer.js` wraps it into the public `Tokenizer`; every failure
//! (malformed JSON, unknown model type, ids that name no token) arrives as a PixelgradError of
//! kind 'invalid' whose `op` is `tokenizer`, `tokenizer.encode` or `tokenizer.decode`.

use js_sys::{Array, Object, Reflect, Uint32Array};
use pixelgrad_text::{ids_from_numbers, Tokenizer};
use wasm_bindgen::prelude::*;

use crate::error::js_err;

/// A loaded tokenizer (internal; the API is `pg.tokenizer`).
#[wasm_bindgen]
pub struct TextTokenizer {
    inner: Tokenizer,
}

#[wasm_bindgen]
impl TextTokenizer {
    /// Parses a tokenizer.json.
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(json: &str) -> Result<TextTokenizer, JsValue> {
        Ok(Self { inner: Tokenizer::from_json(json).map_err(js_err)? })
    }

    /// `{ ids: Uint32Array, tokens: string[], offsets: Uint32Array }` of `text`, the offsets
    /// flattened as start, end pairs in UTF-16 code units of `text` (what `String.slice` takes).
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Object, JsValue> {
        let enc = self.inner.encode(text, add_special).map_err(js_err)?;
        let flat: Vec<u32> = enc.offsets_utf16(text).iter().flat_map(|&(s, e)| [s as u32, e as u32]).collect();
        let tokens: Array = enc.tokens.iter().map(|t| JsValue::from_str(t)).collect();
        let o = Object::new();
        Reflect::set(&o, &"ids".into(), &Uint32Array::from(&enc.ids[..]))?;
        Reflect::set(&o, &"tokens".into(), &tokens)?;
        Reflect::set(&o, &"offsets".into(), &Uint32Array::from(&flat[..]))?;
        Ok(o)
    }

    /// The text of `ids` (numbers: each must be a whole number naming a token).
    pub fn decode(&self, ids: &[f64], skip_special: bool) -> Result<String, JsValue> {
        let ids = ids_from_numbers(ids).map_err(js_err)?;
        self.inner.decode(&ids, skip_special).map_err(js_err)
    }

    /// Tokens in the vocabulary, added tokens included.
    #[wasm_bindgen(js_name = vocabSize)]
    pub fn vocab_size(&self) -> u32 {
        self.inner.vocab_size() as u32
    }

    /// The id of `token`, or `undefined`.
    #[wasm_bindgen(js_name = tokenToId)]
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The token of `id`, or `undefined`.
    #[wasm_bindgen(js_name = idToToken)]
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }
}
