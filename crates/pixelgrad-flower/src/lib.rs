//! pixelgrad-flower: a pixelgrad model as a node of a [Flower](https://flower.ai) federation.
//!
//! Flower runs unmodified as the server (its SuperLink, a ServerApp with Flower's strategies);
//! this crate speaks the SuperLink's Fleet API itself, as Flower's SuperNode does, natively
//! over HTTP and in the browser over `fetch` (the same code compiled to wasm):
//!
//! - [`proto`]: the Fleet protobuf messages (prost derives, flwr 1.42 field numbers);
//! - [`auth`]: the node's P-256 key and the signed-timestamp headers every request carries;
//!   [`keyfile`]: a key kept in a file across runs (for SuperLink node authentication);
//! - [`fleet`]: the Fleet calls and their error mapping;
//! - [`objects`] + [`records`] + [`npy`]: Flower's message/object format (content-addressed
//!   objects, `ArrayRecord`s of `np.save` arrays, `MetricRecord`, `ConfigRecord`);
//! - [`node`]: the node loop (pull, train/evaluate, reply, heartbeats) over a [`node::Learner`];
//!   [`pace`]: when long local work gives a page's event loop (heartbeats) a turn;
//! - [`limits`]: what a server can make the node accept (objects, bytes, array elements),
//!   checked before anything is pulled, allocated or run;
//! - [`learner`]: a `Learner` for any `pixelgrad_nn` module (the CLI's);
//! - [`dp`]: Flower's client-side clipping and local DP, on the device; [`noise`]: Gaussian
//!   noise from OS-seeded ChaCha20; [`accountant`]: Rényi-DP accounting of (ε, δ);
//! - [`partition`]: seeded Dirichlet(α) label shards and IID splits;
//! - [`secagg`]: Flower's secure aggregation (SecAgg+), bit for bit.
//!
//! Wire compatibility is tested against flwr's own Python classes (`tests/wire.rs`); hostile
//! servers (bad IDs, repeated references, endless and stalled answers) in `tests/hostile.rs`;
//! TLS and node authentication against a real SuperLink in `tests/tls_auth.rs`.

pub mod accountant;
pub mod auth;
pub mod dp;
mod error;
mod events;
pub mod fleet;
mod http;
#[cfg(not(target_arch = "wasm32"))]
pub mod keyfile;
pub mod learner;
pub mod legacy;
pub mod limits;
pub mod node;
pub mod noise;
pub mod npy;
pub mod objects;
mod options;
pub mod pace;
pub mod partition;
pub mod privacy;
pub mod proto;
pub mod records;
mod round;
pub mod secagg;
mod secure_round;
#[cfg(all(feature = "fake-server", not(target_arch = "wasm32")))]
pub mod testing;
pub mod transport;

pub use error::{FlowerError, Result};
