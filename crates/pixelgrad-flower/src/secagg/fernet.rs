//! Fernet tokens (the `cryptography` package's `Fernet`, which Flower's SecAgg+ encrypts key
//! shares with), from RustCrypto primitives:
//!
//! - the key is 32 bytes in urlsafe base64: the first 16 sign (HMAC-SHA256), the last 16
//!   encrypt (AES-128-CBC with PKCS#7 padding);
//! - a token is urlsafe base64 (padded) of `0x80 | time (u64 big-endian) | IV (16) |
//!   ciphertext | HMAC-SHA256 over everything before it`;
//! - decryption checks the version byte, the lengths and the HMAC (in constant time) before
//!   decrypting, and, as Flower calls it (no TTL), not the time.

use aes::cipher::{block_padding::Pkcs7, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use base64::engine::general_purpose::URL_SAFE;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::{FlowerError, Result};

type Enc = cbc::Encryptor<aes::Aes128>;
type Dec = cbc::Decryptor<aes::Aes128>;

const VERSION: u8 = 0x80;

/// A Fernet key (signing and encryption halves).
#[derive(Clone)]
pub struct Fernet {
    signing: [u8; 16],
    encryption: [u8; 16],
}

fn bad(msg: &str) -> FlowerError {
    FlowerError::Protocol(format!("Fernet: {msg}"))
}

impl Fernet {
    /// A key given as urlsafe base64 of 32 bytes (what Flower's `generate_shared_key` returns).
    pub fn new(key_b64: &[u8]) -> Result<Fernet> {
        let k = URL_SAFE
            .decode(key_b64)
            .map_err(|_| bad("the key is not urlsafe base64"))?;
        if k.len() != 32 {
            return Err(bad("the key is not 32 bytes"));
        }
        let mut f = Fernet {
            signing: [0; 16],
            encryption: [0; 16],
        };
        f.signing.copy_from_slice(&k[..16]);
        f.encryption.copy_from_slice(&k[16..]);
        Ok(f)
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.signing).expect("HMAC takes any key length")
    }

    /// The token of `plaintext` at `time` (seconds since 1970) with `iv`.
    pub fn encrypt(&self, plaintext: &[u8], time: u64, iv: &[u8; 16]) -> Vec<u8> {
        let ct =
            Enc::new(&self.encryption.into(), iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plaintext);
        let mut body = Vec::with_capacity(1 + 8 + 16 + ct.len() + 32);
        body.push(VERSION);
        body.extend_from_slice(&time.to_be_bytes());
        body.extend_from_slice(iv);
        body.extend_from_slice(&ct);
        let mut m = self.mac();
        m.update(&body);
        body.extend_from_slice(&m.finalize().into_bytes());
        URL_SAFE.encode(body).into_bytes()
    }

    /// The plaintext of `token`, if it was made with this key and not altered.
    pub fn decrypt(&self, token: &[u8]) -> Result<Vec<u8>> {
        let data = URL_SAFE
            .decode(token)
            .map_err(|_| bad("the token is not urlsafe base64"))?;
        if data.first() != Some(&VERSION) {
            return Err(bad("not a version-0x80 token"));
        }
        // version + time + IV + at least one block + HMAC
        if data.len() < 1 + 8 + 16 + 16 + 32 || (data.len() - 1 - 8 - 16 - 32) % 16 != 0 {
            return Err(bad("a token of impossible length"));
        }
        let (body, tag) = data.split_at(data.len() - 32);
        let mut m = self.mac();
        m.update(body);
        m.verify_slice(tag)
            .map_err(|_| bad("the token's signature does not verify (wrong key or altered)"))?;
        let mut iv = [0u8; 16];
        iv.copy_from_slice(&body[9..25]);
        Dec::new(&self.encryption.into(), (&iv).into())
            .decrypt_padded_vec_mut::<Pkcs7>(&body[25..])
            .map_err(|_| bad("bad padding"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tampering() {
        let key = URL_SAFE.encode([7u8; 32]);
        let f = Fernet::new(key.as_bytes()).unwrap();
        let t = f.encrypt(b"share bytes", 1_700_000_000, &[1; 16]);
        assert_eq!(f.decrypt(&t).unwrap(), b"share bytes");
        let mut raw = URL_SAFE.decode(&t).unwrap();
        raw[30] ^= 1;
        assert!(f.decrypt(URL_SAFE.encode(&raw).as_bytes()).is_err());
        let other = Fernet::new(URL_SAFE.encode([8u8; 32]).as_bytes()).unwrap();
        assert!(other.decrypt(&t).is_err());
        assert!(f.decrypt(b"not base64!").is_err());
        assert!(Fernet::new(b"short").is_err());
    }
}
