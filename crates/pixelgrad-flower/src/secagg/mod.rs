//! Flower's secure aggregation (SecAgg+, flwr 1.42) on the node's side, interoperating with
//! Flower's unmodified `SecAggPlusWorkflow` and bit for bit equal to its `secaggplus_mod` given
//! the same random draws (tests/secagg_golden.rs, against vectors made with the pinned flwr):
//!
//! - [`protocol`]: the four stages (setup, key sharing, masked input collection, unmasking);
//! - [`keys`]: P-384 key pairs in PEM, ECDH + HKDF-SHA256 shared keys;
//! - [`fernet`]: the authenticated encryption of key shares (AES-128-CBC + HMAC-SHA256);
//! - [`shamir`]: Shamir sharing over GF(2^128) in 16-byte blocks;
//! - [`quantize`]: the weight ratio, clipping and stochastic rounding, and the server's decoding;
//! - [`prg`] over [`numpy_rng`]: the masks, numpy's MT19937 seeded as Flower seeds it;
//! - [`randomness`]: keys, seeds and IVs from the OS, rounding from OS-seeded ChaCha20;
//! - [`aggregate`]: what the server computes (for tests and benchmarks).

pub mod aggregate;
pub mod fernet;
pub mod keys;
pub mod numpy_rng;
pub mod prg;
pub mod protocol;
pub mod quantize;
pub mod randomness;
pub mod shamir;

pub use protocol::{stage_of, MaskInput, SecAggClient, Setup, Stage, RECORD_KEY_CONFIGS};
pub use randomness::{Entropy, OsEntropy};
