//! SecAgg+'s key pairs and key agreement, as flwr 1.42 makes them
//! (`flwr.supercore.primitives.asymmetric`, `...secure_aggregation.crypto.symmetric_encryption`):
//!
//! - key pairs on NIST P-384 (`SECP384R1`);
//! - a secret key travels (Shamir-shared) as unencrypted PKCS#8 PEM, a public key as
//!   SubjectPublicKeyInfo PEM with the uncompressed point, both with `\n` line ends;
//! - the shared key of two parties is ECDH (the x-coordinate, 48 bytes) through HKDF-SHA256
//!   with no salt and no info to 32 bytes, as urlsafe base64 (44 ASCII bytes, padded): a Fernet
//!   key for the share ciphertexts (second key pair) and, as bytes, the seed of a pairwise mask
//!   (first key pair).

use base64::engine::general_purpose::URL_SAFE;
use base64::Engine as _;
use hkdf::Hkdf;
use p384::ecdh::diffie_hellman;
use p384::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding,
};
use p384::{PublicKey, SecretKey};
use sha2::Sha256;

use crate::{FlowerError, Result};

fn bad(what: &str, e: impl std::fmt::Display) -> FlowerError {
    FlowerError::Protocol(format!("SecAgg+ {what}: {e}"))
}

/// A P-384 secret key from 48 big-endian bytes (must be in `1..n`).
pub fn secret_from_bytes(bytes: &[u8]) -> Result<SecretKey> {
    SecretKey::from_slice(bytes).map_err(|e| bad("secret key", e))
}

/// A fresh P-384 secret key from the OS (natively) or `crypto.getRandomValues` (browser).
pub fn random_secret() -> Result<SecretKey> {
    for _ in 0..16 {
        let mut b = [0u8; 48];
        getrandom::getrandom(&mut b).map_err(|e| {
            FlowerError::Invalid(format!("no random numbers for a SecAgg+ key: {e}"))
        })?;
        if let Ok(k) = SecretKey::from_slice(&b) {
            return Ok(k);
        }
    }
    Err(FlowerError::Invalid(
        "could not draw a valid P-384 key".into(),
    ))
}

/// The secret key as Flower serialises it (PKCS#8 PEM).
pub fn secret_to_pem(sk: &SecretKey) -> Result<Vec<u8>> {
    let pem = sk
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| bad("secret key encoding", e))?;
    Ok(pem.as_bytes().to_vec())
}

/// A secret key from PKCS#8 PEM (a dropped node's key, rebuilt from shares).
pub fn secret_from_pem(pem: &[u8]) -> Result<SecretKey> {
    let s = std::str::from_utf8(pem).map_err(|e| bad("secret key", e))?;
    SecretKey::from_pkcs8_pem(s).map_err(|e| bad("secret key", e))
}

/// The public key as Flower serialises it (SubjectPublicKeyInfo PEM).
pub fn public_to_pem(pk: &PublicKey) -> Result<Vec<u8>> {
    let pem = pk
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| bad("public key encoding", e))?;
    Ok(pem.into_bytes())
}

/// A peer's public key from SubjectPublicKeyInfo PEM.
pub fn public_from_pem(pem: &[u8]) -> Result<PublicKey> {
    let s = std::str::from_utf8(pem).map_err(|e| bad("public key", e))?;
    PublicKey::from_public_key_pem(s).map_err(|e| bad("public key", e))
}

/// `generate_shared_key(sk, pk)`: urlsafe base64 of HKDF-SHA256(ECDH(sk, pk)), 44 bytes.
pub fn shared_key(sk: &SecretKey, pk: &PublicKey) -> Vec<u8> {
    let secret = diffie_hellman(sk.to_nonzero_scalar(), pk.as_affine());
    let hk = Hkdf::<Sha256>::new(None, secret.raw_secret_bytes());
    let mut okm = [0u8; 32];
    hk.expand(&[], &mut okm)
        .expect("32 bytes is a valid HKDF-SHA256 length");
    URL_SAFE.encode(okm).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_is_symmetric_and_pem_round_trips() {
        let a = random_secret().unwrap();
        let b = random_secret().unwrap();
        let k1 = shared_key(&a, &b.public_key());
        let k2 = shared_key(&b, &a.public_key());
        assert_eq!(k1, k2);
        assert_eq!(k1.len(), 44);
        let pem = secret_to_pem(&a).unwrap();
        assert_eq!(secret_from_pem(&pem).unwrap(), a);
        let ppem = public_to_pem(&a.public_key()).unwrap();
        assert_eq!(public_from_pem(&ppem).unwrap(), a.public_key());
        assert!(
            public_from_pem(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .is_err()
        );
        assert!(secret_from_bytes(&[0; 48]).is_err());
    }
}
