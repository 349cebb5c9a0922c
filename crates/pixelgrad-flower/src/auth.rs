//! The node's identity on the Fleet API.
//!
//! flwr's SuperLink authenticates every Fleet request (even with `--insecure`): the request
//! carries the node's EC public key, the current time, and an ECDSA/SHA-256 signature of that
//! time. The facts, from flwr 1.42's `node_auth_http_interceptor.py` and the SuperLink's
//! `node_auth.py`:
//!
//! - `flwr-public-key`: base64 of the public key as PEM (SubjectPublicKeyInfo); the same PEM
//!   bytes are the `public_key` of `RegisterNode`/`ActivateNode`, and the node is later found
//!   by them. Any NIST curve is accepted; this crate uses P-256 (also WebCrypto's curve).
//! - `flwr-timestamp`: `datetime.now(UTC).isoformat()`, e.g. `2026-12-01T09:34:55.515123+00:00`;
//!   the SuperLink accepts it from 5 s in the future to 305 s in the past.
//! - `flwr-signature`: base64 of the DER ECDSA signature of the timestamp's ASCII bytes.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{EncodePublicKey, LineEnding};

use crate::{FlowerError, Result};

/// Header names of the signed identity.
pub const PUBLIC_KEY_HEADER: &str = "flwr-public-key";
pub const TIMESTAMP_HEADER: &str = "flwr-timestamp";
pub const SIGNATURE_HEADER: &str = "flwr-signature";

/// A node key pair (P-256) and its PEM public key.
#[derive(Clone)]
pub struct NodeKey {
    key: SigningKey,
    public_pem: Vec<u8>,
}

impl std::fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeKey")
            .field("public_pem", &String::from_utf8_lossy(&self.public_pem))
            .finish_non_exhaustive()
    }
}

impl NodeKey {
    /// A fresh key from the OS (natively) or `crypto.getRandomValues` (browser).
    pub fn generate() -> Result<Self> {
        for _ in 0..8 {
            let mut bytes = [0u8; 32];
            getrandom::getrandom(&mut bytes).map_err(|e| {
                FlowerError::Invalid(format!("no random numbers for a node key: {e}"))
            })?;
            if let Ok(k) = Self::from_secret(&bytes) {
                return Ok(k);
            }
        }
        Err(FlowerError::Invalid(
            "could not draw a valid P-256 key".into(),
        ))
    }

    /// The key with secret scalar `bytes` (big-endian, 32 bytes; for tests and fixed identities).
    pub fn from_secret(bytes: &[u8; 32]) -> Result<Self> {
        let key = SigningKey::from_bytes(bytes.into())
            .map_err(|e| FlowerError::Invalid(format!("invalid P-256 secret: {e}")))?;
        let pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| FlowerError::Invalid(format!("cannot encode the public key: {e}")))?;
        Ok(NodeKey {
            key,
            public_pem: pem.into_bytes(),
        })
    }

    /// PEM SubjectPublicKeyInfo bytes (what `RegisterNode` carries).
    pub fn public_pem(&self) -> &[u8] {
        &self.public_pem
    }

    /// DER signature of `msg` (ECDSA P-256, SHA-256; deterministic, RFC 6979).
    pub fn sign(&self, msg: &[u8]) -> Vec<u8> {
        let sig: Signature = self.key.sign(msg);
        sig.to_der().as_bytes().to_vec()
    }

    /// The three identity headers for a request sent at `unix_seconds`.
    pub fn headers(&self, unix_seconds: f64) -> [(&'static str, String); 3] {
        let ts = iso_timestamp(unix_seconds);
        let sig = self.sign(ts.as_bytes());
        [
            (PUBLIC_KEY_HEADER, B64.encode(&self.public_pem)),
            (TIMESTAMP_HEADER, ts),
            (SIGNATURE_HEADER, B64.encode(sig)),
        ]
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffff+00:00` for a Unix time, as Python's `isoformat()` of an aware
/// UTC datetime writes it.
pub fn iso_timestamp(unix_seconds: f64) -> String {
    let micros_total = (unix_seconds * 1e6).round() as i64;
    let secs = micros_total.div_euclid(1_000_000);
    let micros = micros_total.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;
    use p256::pkcs8::DecodePublicKey;

    #[test]
    fn timestamps() {
        assert_eq!(iso_timestamp(0.0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(
            iso_timestamp(1_796_117_695.515123),
            "2026-12-01T09:34:55.515123+00:00"
        );
        assert_eq!(
            iso_timestamp(951_782_400.5),
            "2000-02-29T00:00:00.500000+00:00"
        );
    }

    #[test]
    fn signature_verifies_with_the_pem_key() {
        let k = NodeKey::from_secret(&[7u8; 32]).unwrap();
        let pem = std::str::from_utf8(k.public_pem()).unwrap();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{pem}");
        let vk = VerifyingKey::from_public_key_pem(pem).unwrap();
        let h = k.headers(1_796_117_695.0);
        let sig = Signature::from_der(&B64.decode(&h[2].1).unwrap()).unwrap();
        assert!(vk.verify(h[1].1.as_bytes(), &sig).is_ok());
        assert_ne!(NodeKey::generate().unwrap().public_pem(), k.public_pem());
    }
}
