//! The node's identity on the Fleet API.
//!
//! flwr's SuperLink authenticates every Fleet request (even with `--insecure`): the request
//! carries the node's EC public key, the current time, and an ECDSA/SHA-256 signature of that
//! time. The facts, from flwr 1.42's `supernode/node_auth_http_interceptor.py` (what a
//! SuperNode sends) and `superlink/routers/fleet/node_auth.py` (what the SuperLink checks):
//!
//! - `flwr-public-key`: base64 of the public key as PEM (SubjectPublicKeyInfo); the same PEM
//!   bytes are the `public_key` of `RegisterNode`/`ActivateNode` (the SuperLink refuses a
//!   request whose body names another key), and on every other call the SuperLink looks the
//!   node up by them and refuses a `node_id` that is not that key's. Any NIST curve is
//!   accepted; this crate uses P-256 (also WebCrypto's curve).
//! - `flwr-timestamp`: `datetime.now(UTC).isoformat()`, e.g. `2026-12-01T09:34:55.515123+00:00`;
//!   the SuperLink accepts it from 5 s in the future to 305 s in the past
//!   (`-SYSTEM_TIME_TOLERANCE < age < TIMESTAMP_TOLERANCE + SYSTEM_TIME_TOLERANCE`, 5 and 300).
//! - `flwr-signature`: base64 of the DER ECDSA signature of the timestamp's ASCII bytes.
//!
//! That is all flwr 1.42 signs and checks, and this crate signs exactly that: **the signature
//! covers the timestamp only, not the route or the body.** Someone who sees a request's headers
//! can replay them with another body for about five minutes; that is why the SuperLink refuses
//! `--enable-supernode-auth` without TLS, and why a node should only talk to an `https://`
//! SuperLink whose certificate it verifies.
//!
//! With node authentication on (`flower-superlink --enable-supernode-auth`), a node cannot
//! register itself: the operator registers its public key with `flwr supernode register
//! KEY.pub`, which takes the OpenSSH form ([`NodeKey::openssh_public`]). A key kept across runs
//! is a file natively ([`crate::keyfile`]) and a non-extractable WebCrypto key in the browser
//! (the signing is then done by the page: `NodeKey::from_js_signer`, wasm only).

use base64::engine::general_purpose::{STANDARD as B64, STANDARD_NO_PAD as B64_NO_PAD};
use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{EncodePublicKey, LineEnding};
use sha2::{Digest, Sha256};

use crate::{FlowerError, Result};

/// Header names of the signed identity.
pub const PUBLIC_KEY_HEADER: &str = "flwr-public-key";
pub const TIMESTAMP_HEADER: &str = "flwr-timestamp";
pub const SIGNATURE_HEADER: &str = "flwr-signature";

/// Who signs: the key itself (natively, or an ephemeral key in wasm), or the page through a JS
/// function (a non-extractable WebCrypto key).
#[derive(Clone)]
enum Signer {
    Local(SigningKey),
    #[cfg(target_arch = "wasm32")]
    Js(js_sys::Function),
}

/// A node's P-256 identity: its public key (PEM and OpenSSH forms) and a way to sign.
#[derive(Clone)]
pub struct NodeKey {
    signer: Signer,
    verifying: VerifyingKey,
    public_pem: Vec<u8>,
    persistent: bool,
}

impl std::fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeKey")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

fn pem_of(v: &VerifyingKey) -> Result<Vec<u8>> {
    v.to_public_key_pem(LineEnding::LF)
        .map(String::into_bytes)
        .map_err(|e| FlowerError::Invalid(format!("cannot encode the public key: {e}")))
}

/// The SSH wire form of a P-256 key: the key type, the curve and the uncompressed point.
fn openssh_blob(v: &VerifyingKey) -> Vec<u8> {
    let point = v.to_encoded_point(false);
    let mut blob = Vec::with_capacity(104);
    ssh_string(&mut blob, b"ecdsa-sha2-nistp256");
    ssh_string(&mut blob, b"nistp256");
    ssh_string(&mut blob, point.as_bytes());
    blob
}

fn openssh_line(v: &VerifyingKey) -> String {
    format!("ecdsa-sha2-nistp256 {}", B64.encode(openssh_blob(v)))
}

fn fingerprint_of(v: &VerifyingKey) -> String {
    format!(
        "SHA256:{}",
        B64_NO_PAD.encode(Sha256::digest(openssh_blob(v)))
    )
}

/// `(OpenSSH line, fingerprint)` of a P-256 public key given as SubjectPublicKeyInfo DER (what
/// WebCrypto's `exportKey('spki')` gives).
pub fn describe_public_key(spki_der: &[u8]) -> Result<(String, String)> {
    use p256::pkcs8::DecodePublicKey;
    let v = VerifyingKey::from_public_key_der(spki_der)
        .map_err(|e| FlowerError::Invalid(format!("not a P-256 public key: {e}")))?;
    Ok((openssh_line(&v), fingerprint_of(&v)))
}

/// One SSH wire-format string: a big-endian u32 length, then the bytes.
fn ssh_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s);
}

impl NodeKey {
    /// A fresh key from the OS (natively) or `crypto.getRandomValues` (browser), for this run
    /// only.
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
        Self::from_signing_key(key)
    }

    pub(crate) fn from_signing_key(key: SigningKey) -> Result<Self> {
        let verifying = *key.verifying_key();
        Ok(NodeKey {
            public_pem: pem_of(&verifying)?,
            signer: Signer::Local(key),
            verifying,
            persistent: false,
        })
    }

    /// The same key marked as kept across runs (a key file, a page's stored key): a node with
    /// it does not unregister when it leaves, as flwr 1.42 never lets an unregistered key
    /// register again.
    pub fn persistent(mut self) -> Self {
        self.persistent = true;
        self
    }

    /// Whether the key is kept across runs.
    pub fn is_persistent(&self) -> bool {
        self.persistent
    }

    /// The secret key, when this process holds it (not for a page's WebCrypto key).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn signing_key(&self) -> Option<&SigningKey> {
        match &self.signer {
            Signer::Local(k) => Some(k),
            #[cfg(target_arch = "wasm32")]
            Signer::Js(_) => None,
        }
    }

    /// A key whose secret stays in the page: `spki_der` is the public key (WebCrypto's
    /// `exportKey('spki')`), `sign(Uint8Array) -> Promise<ArrayBuffer>` returns WebCrypto's
    /// ECDSA P-256/SHA-256 signature (64 bytes, r ‖ s), which is checked against the key and
    /// converted to the DER form Flower verifies.
    #[cfg(target_arch = "wasm32")]
    pub fn from_js_signer(spki_der: &[u8], sign: js_sys::Function) -> Result<Self> {
        use p256::pkcs8::DecodePublicKey;
        let verifying = VerifyingKey::from_public_key_der(spki_der).map_err(|e| {
            FlowerError::Invalid(format!("the node key is not a P-256 public key: {e}"))
        })?;
        Ok(NodeKey {
            public_pem: pem_of(&verifying)?,
            signer: Signer::Js(sign),
            verifying,
            persistent: true,
        })
    }

    /// PEM SubjectPublicKeyInfo bytes (what `RegisterNode` carries).
    pub fn public_pem(&self) -> &[u8] {
        &self.public_pem
    }

    /// The public key as one OpenSSH line, `ecdsa-sha2-nistp256 AAAA...`, the form
    /// `flwr supernode register KEY.pub` reads.
    pub fn openssh_public(&self) -> String {
        openssh_line(&self.verifying)
    }

    /// `SHA256:...` of the OpenSSH key, as `ssh-keygen -lf KEY.pub` prints it.
    pub fn fingerprint(&self) -> String {
        fingerprint_of(&self.verifying)
    }

    /// DER signature of `msg` (ECDSA P-256, SHA-256).
    pub async fn sign(&self, msg: &[u8]) -> Result<Vec<u8>> {
        let sig: Signature = match &self.signer {
            Signer::Local(k) => k.sign(msg),
            #[cfg(target_arch = "wasm32")]
            Signer::Js(f) => js_sign(f, msg).await?,
        };
        // A signature that does not verify would only earn a 401 from the SuperLink.
        self.verifying
            .verify(msg, &sig)
            .map_err(|_| FlowerError::Invalid("the node key's signature does not verify".into()))?;
        Ok(sig.to_der().as_bytes().to_vec())
    }

    /// The three identity headers for a request sent at `unix_seconds`.
    pub async fn headers(&self, unix_seconds: f64) -> Result<[(&'static str, String); 3]> {
        let ts = iso_timestamp(unix_seconds);
        let sig = self.sign(ts.as_bytes()).await?;
        Ok([
            (PUBLIC_KEY_HEADER, B64.encode(&self.public_pem)),
            (TIMESTAMP_HEADER, ts),
            (SIGNATURE_HEADER, B64.encode(sig)),
        ])
    }
}

#[cfg(target_arch = "wasm32")]
async fn js_sign(f: &js_sys::Function, msg: &[u8]) -> Result<Signature> {
    use wasm_bindgen::{JsCast, JsValue};
    let err = |e: JsValue| {
        let m = e
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .or_else(|| e.as_string())
            .unwrap_or_else(|| "unknown error".into());
        FlowerError::Invalid(format!("the page's node key could not sign: {m}"))
    };
    let p = f
        .call1(&JsValue::NULL, &js_sys::Uint8Array::from(msg))
        .map_err(err)?;
    let v = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&p))
        .await
        .map_err(err)?;
    let bytes = if v.is_instance_of::<js_sys::ArrayBuffer>() {
        js_sys::Uint8Array::new(&v).to_vec()
    } else if let Some(a) = v.dyn_ref::<js_sys::Uint8Array>() {
        a.to_vec()
    } else {
        return Err(FlowerError::Invalid(
            "the page's node key signer must resolve to an ArrayBuffer or Uint8Array".into(),
        ));
    };
    Signature::from_slice(&bytes).map_err(|_| {
        FlowerError::Invalid(format!(
            "the page's node key gave a {}-byte signature, not a 64-byte P-256 one",
            bytes.len()
        ))
    })
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
        let h = pollster::block_on(k.headers(1_796_117_695.0)).unwrap();
        let sig = Signature::from_der(&B64.decode(&h[2].1).unwrap()).unwrap();
        assert!(vk.verify(h[1].1.as_bytes(), &sig).is_ok());
        assert_ne!(NodeKey::generate().unwrap().public_pem(), k.public_pem());
    }

    #[test]
    fn openssh_form() {
        let k = NodeKey::from_secret(&[7u8; 32]).unwrap();
        let line = k.openssh_public();
        let b = B64
            .decode(line.strip_prefix("ecdsa-sha2-nistp256 ").unwrap())
            .unwrap();
        // "ecdsa-sha2-nistp256" (4 + 19), "nistp256" (4 + 8), the point (4 + 65)
        assert_eq!(b.len(), 104);
        assert_eq!(&b[..4], &[0, 0, 0, 19]);
        assert_eq!(&b[23..27], &[0, 0, 0, 8]);
        assert_eq!(&b[35..40], &[0, 0, 0, 65, 4]);
        assert!(k.fingerprint().starts_with("SHA256:") && k.fingerprint().len() == 50);
    }
}
