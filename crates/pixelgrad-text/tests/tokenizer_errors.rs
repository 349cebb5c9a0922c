//! Bad input is a typed error, never a panic: malformed JSON, unknown model types, files the
//! library cannot build, ids outside the vocabulary, numbers that are not ids.

use pixelgrad_text::{ids_from_numbers, Error, Tokenizer};

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn malformed_json_is_a_json_error_with_its_position() {
    let err = Tokenizer::from_json("{\"model\": {\"type\": \"BPE\",").unwrap_err();
    assert!(matches!(err, Error::Json { line: 1, .. }), "{err:?}");
    let err = Tokenizer::from_json("").unwrap_err();
    assert!(matches!(err, Error::Json { .. }), "{err:?}");
    assert!(err.to_string().starts_with("tokenizer: "), "{err}");
}

#[test]
fn unknown_model_type_is_named() {
    let mut v: serde_json::Value = serde_json::from_str(&fixture("bpe.json")).unwrap();
    v["model"]["type"] = "Sentencepiece2000".into();
    let err = Tokenizer::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err, Error::UnknownModel { found: "Sentencepiece2000".into() });
    v["model"]["type"] = 7.into();
    let err = Tokenizer::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err, Error::UnknownModel { found: "7".into() });
}

#[test]
fn json_that_is_no_tokenizer_is_invalid() {
    for json in ["{}", "[1, 2]", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": 3}}"] {
        let err = Tokenizer::from_json(json).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{json}: {err:?}");
    }
    // a known model whose vocabulary has the wrong shape
    let mut v: serde_json::Value = serde_json::from_str(&fixture("wordpiece.json")).unwrap();
    v["model"]["vocab"] = serde_json::json!(["a", "b"]);
    assert!(matches!(Tokenizer::from_json(&v.to_string()), Err(Error::Invalid { .. })));
}

#[test]
fn ids_outside_the_vocabulary_are_refused_not_dropped() {
    for name in ["bpe.json", "wordpiece.json", "unigram.json"] {
        let tok = Tokenizer::from_json(&fixture(name)).unwrap();
        let n = tok.vocab_size() as u32;
        assert!(tok.decode(&[0, n - 1], false).is_ok(), "{name}");
        let err = tok.decode(&[0, 1, n], false).unwrap_err();
        assert_eq!(err, Error::IdOutOfRange { id: n, index: 2, vocab_size: n as usize }, "{name}");
        let err = tok.decode(&[u32::MAX], true).unwrap_err();
        assert!(matches!(err, Error::IdOutOfRange { id: u32::MAX, index: 0, .. }), "{name}: {err:?}");
        assert!(err.to_string().starts_with("tokenizer.decode: "), "{err}");
    }
}

#[test]
fn numbers_that_are_not_ids_are_refused() {
    assert_eq!(ids_from_numbers(&[0.0, 5.0, 4294967295.0]), Ok(vec![0, 5, u32::MAX]));
    for (bad, at) in
        [(vec![1.0, -1.0], 1), (vec![0.5], 0), (vec![2.0, 3.0, f64::NAN], 2), (vec![4294967296.0], 0), (vec![f64::INFINITY], 0)]
    {
        match ids_from_numbers(&bad) {
            Err(Error::NotAnId { index, .. }) => assert_eq!(index, at, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}
