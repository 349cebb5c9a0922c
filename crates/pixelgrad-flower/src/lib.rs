//! pixelgrad-flower: a pixelgrad model as a node of a [Flower](https://flower.ai) federation.
//!
//! Flower runs unmodified as the server (its SuperLink, a ServerApp with Flower's strategies);
//! this crate speaks the SuperLink's Fleet API itself, as Flower's SuperNode does, natively
//! over HTTP and in the browser over `fetch` (the same code compiled to wasm):
//!
//! - [`proto`]: the Fleet protobuf messages (prost derives, flwr 1.42 field numbers);
//! - [`auth`]: the node's P-256 key and the signed-timestamp headers every request carries;
//! - [`fleet`]: the Fleet calls and their error mapping;
//! - [`objects`] + [`records`] + [`npy`]: Flower's message/object format (content-addressed
//!   objects, `ArrayRecord`s of `np.save` arrays, `MetricRecord`, `ConfigRecord`);
//! - [`node`]: the node loop (pull, train/evaluate, reply, heartbeats) over a [`node::Learner`];
//! - [`learner`]: a `Learner` for any `pixelgrad_nn` module (the CLI's);
//! - [`dp`]: Flower's client-side clipping and local DP, on the device;
//! - [`partition`]: seeded Dirichlet(α) label shards and IID splits.
//!
//! Wire compatibility is tested against flwr's own Python classes (`tests/wire.rs`).

pub mod auth;
pub mod dp;
mod error;
pub mod fleet;
pub mod learner;
pub mod node;
pub mod npy;
pub mod objects;
pub mod partition;
pub mod proto;
pub mod records;
pub mod transport;

pub use error::{FlowerError, Result};
