//! The comparison shared by the parity and regeneration tests: a tokenizer.json loaded by this
//! crate against what the Python `tokenizers` package wrote for it (fixtures/make.py).

use pixelgrad_text::Tokenizer;
use serde_json::Value;

/// Every difference between this crate's results on `tokenizer_json` and the expectations in
/// `expected_json` (NAME.expected.json), one line each; empty when they agree. Also returns how
/// many strings were compared.
pub fn mismatches(name: &str, tokenizer_json: &str, expected_json: &str) -> (Vec<String>, usize) {
    let tok = Tokenizer::from_json(tokenizer_json).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want: Value = serde_json::from_str(expected_json).unwrap_or_else(|e| panic!("{name}.expected.json: {e}"));
    let mut bad = Vec::new();
    if want["vocab_size"].as_u64() != Some(tok.vocab_size() as u64) {
        bad.push(format!("{name}: vocab_size {} vs Python's {}", tok.vocab_size(), want["vocab_size"]));
    }
    let cases = want["cases"].as_array().unwrap_or_else(|| panic!("{name}: no cases"));
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let ids = |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect::<Vec<_>>();
        let enc = tok.encode(text, true).unwrap_or_else(|e| panic!("{name}: {text:?}: {e}"));
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                bad.push(format!("{name}: {text:?}: {what}: {got} vs Python's {want}"));
            }
        };
        check("ids", format!("{:?}", enc.ids), format!("{:?}", ids(&case["ids"])));
        let want_tokens: Vec<&str> = case["tokens"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        check("tokens", format!("{:?}", enc.tokens), format!("{want_tokens:?}"));
        let want_offsets: Vec<(usize, usize)> = case["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o[0].as_u64().unwrap() as usize, o[1].as_u64().unwrap() as usize))
            .collect();
        check("offsets", format!("{:?}", enc.offsets), format!("{want_offsets:?}"));
        let plain = tok.encode(text, false).unwrap();
        check("ids without special tokens", format!("{:?}", plain.ids), format!("{:?}", ids(&case["ids_plain"])));
        let want_ids = ids(&case["ids"]);
        let decoded = tok.decode(&want_ids, true).unwrap_or_else(|e| panic!("{name}: {text:?}: {e}"));
        check("decode", format!("{decoded:?}"), format!("{:?}", case["decoded"].as_str().unwrap()));
        let decoded = tok.decode(&want_ids, false).unwrap();
        check("decode with special tokens", format!("{decoded:?}"), format!("{:?}", case["decoded_with_special"].as_str().unwrap()));
    }
    (bad, cases.len())
}
