//! The committed fixtures (fixtures/make.py, Python `tokenizers` as the oracle): ids, tokens,
//! offsets, and decoding of BPE, WordPiece and Unigram tokenizers equal the Python package's,
//! on plain text, accents, other scripts, emoji, the empty string and long words.

mod oracle;

use pixelgrad_text::Tokenizer;

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn check(name: &str) {
    let (bad, n) = oracle::mismatches(name, &fixture(&format!("{name}.json")), &fixture(&format!("{name}.expected.json")));
    assert!(n >= 16, "{name}: only {n} cases");
    assert!(bad.is_empty(), "{} of the comparisons differ:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn bpe_matches_python() {
    check("bpe");
}

#[test]
fn wordpiece_matches_python() {
    check("wordpiece");
}

#[test]
fn unigram_matches_python() {
    check("unigram");
}

/// Byte-level BPE loses nothing: every test string (emoji, whitespace, scripts it never saw)
/// comes back exactly; the special token is left out or kept as asked.
#[test]
fn byte_level_bpe_round_trips_every_string() {
    let tok = Tokenizer::from_json(&fixture("bpe.json")).unwrap();
    let expected: serde_json::Value = serde_json::from_str(&fixture("bpe.expected.json")).unwrap();
    for case in expected["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let enc = tok.encode(text, true).unwrap();
        assert_eq!(tok.decode(&enc.ids, true).unwrap(), text);
        assert_eq!(tok.decode(&enc.ids, false).unwrap(), format!("{text}<|endoftext|>"));
    }
}

/// Offsets in UTF-16 units pick each token's source out of the text as JavaScript slices it.
#[test]
fn utf16_offsets_slice_the_source_of_each_token() {
    let tok = Tokenizer::from_json(&fixture("unigram.json")).unwrap();
    let text = "I love pizza 🍕 and 😀 days";
    let enc = tok.encode(text, false).unwrap();
    let units: Vec<u16> = text.encode_utf16().collect();
    let pieces: Vec<String> = enc.offsets_utf16(text).iter().map(|&(s, e)| String::from_utf16(&units[s..e]).unwrap()).collect();
    let chars: Vec<char> = text.chars().collect();
    let by_chars: Vec<String> = enc.offsets.iter().map(|&(s, e)| chars[s..e].iter().collect()).collect();
    assert_eq!(pieces, by_chars);
    assert!(pieces.iter().any(|p| p.contains('🍕')), "{pieces:?}");
    assert_eq!(tok.token_to_id("<unk>"), Some(1));
    assert_eq!(tok.id_to_token(1).as_deref(), Some("<unk>"));
    assert_eq!(tok.token_to_id("no such token"), None);
}
