//! One encoded text: ids, token strings and where each token came from.

/// The result of [`crate::Tokenizer::encode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The token ids, special tokens included when they were asked for.
    pub ids: Vec<u32>,
    /// The tokens as the vocabulary spells them (`"##ing"`, `"Ġthe"`, `"▁the"`).
    pub tokens: Vec<String>,
    /// Each token's span of the input as `(start, end)` in Unicode scalar values (characters),
    /// the offsets the Python `tokenizers` package reports; special tokens have `(0, 0)`.
    pub offsets: Vec<(usize, usize)>,
}

impl Encoded {
    /// The offsets in UTF-16 code units of `text` (the encoded text), so that JavaScript's
    /// `text.slice(start, end)` gives each token's source. An offset past the end of `text`
    /// (a text other than the encoded one) is clamped to its end.
    pub fn offsets_utf16(&self, text: &str) -> Vec<(usize, usize)> {
        // at[i]: the UTF-16 position of character i (and of the end, at i = character count)
        let mut at = Vec::with_capacity(text.len() + 1);
        let mut pos = 0;
        for c in text.chars() {
            at.push(pos);
            pos += c.len_utf16();
        }
        at.push(pos);
        let to16 = |i: usize| at.get(i).copied().unwrap_or(pos);
        self.offsets.iter().map(|&(s, e)| (to16(s), to16(e))).collect()
    }
}
